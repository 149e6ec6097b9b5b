/**
 * Writes a run's tool calls to "RunToolCall" (append-only; sealed by the run's terminal event).
 *
 * Guarantees:
 * - the record comes before the effect: a call to a tool that is not read-only is committed as
 *   `outcome: "started"` before it is forwarded (`start`), in a transaction that holds the run's
 *   row lock and only succeeds while this executor still holds this attempt of the run. If that
 *   write fails the call must not be made (the caller gets StorageRejected);
 * - completed calls are written in completion order as they complete: at once when no write is
 *   in flight, else together once it is done (at most 100 a batch), so the writes overlap the
 *   script and a run whose executor dies still has its calls on record (a "started" row is
 *   completed once, the trigger allows nothing else); a failed batch is kept, never an unhandled
 *   rejection, and `flush` reports it;
 * - what is stored is already normalized (lib/storable-text.ts) and size-capped by the caller.
 */
import type { Db } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";

export type CallRow = {
  seq: number;
  server: string;
  tool: string;
  readOnly: boolean;
  argsDigest: string;
  resultDigest: string | null;
  args: Prisma.InputJsonValue;
  result: Prisma.InputJsonValue | null;
  durationMs: number;
  /** "refused": not made (it left the approved plan); written once, like a completed call. */
  outcome: "ok" | "error" | "refused";
  error: string | null;
  /** True once the "started" row is committed; its completion is then an update. */
  started: boolean;
};

/** The run is fenced by its status, executor and attempt: a lost executor cannot write into a retry. */
export type RunFence = { runId: string; executorId: string; attempt: number };

export class StorageRejected extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StorageRejected";
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 500);

export class CallRecorder {
  private pending: CallRow[] = [];
  private chain: Promise<void> = Promise.resolve();
  private writing = false;
  private failure: unknown = null;

  constructor(
    private readonly db: Db,
    private readonly fence: RunFence,
  ) {}

  /** Commits the "started" row of a call that may have an effect; throws StorageRejected if it cannot. */
  async start(row: CallRow): Promise<void> {
    const { runId, executorId, attempt } = this.fence;
    try {
      await this.db.$transaction(async (tx) => {
        const held = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM "Run" WHERE id = ${runId}::uuid AND status = 'running' AND "executorId" = ${executorId} AND attempt = ${attempt} FOR UPDATE`;
        if (held.length === 0) throw new StorageRejected("this executor no longer holds the run");
        await tx.runToolCall.create({
          data: {
            runId,
            seq: row.seq,
            server: row.server,
            tool: row.tool,
            readOnly: row.readOnly,
            argsDigest: row.argsDigest,
            args: row.args,
            durationMs: 0,
            outcome: "started",
          },
        });
      });
      row.started = true;
    } catch (error) {
      if (error instanceof StorageRejected) throw error;
      throw new StorageRejected(`the record of tool call ${row.server}.${row.tool} could not be stored (${errorText(error)})`, { cause: error });
    }
  }

  /** Queues a completed call (started or not) for writing. */
  add(row: CallRow): void {
    this.pending.push(row);
    if (!this.writing || this.pending.length >= 100) this.writePending();
  }

  private writePending(): void {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    this.writing = true;
    this.chain = this.chain
      .then(async () => {
        if (this.failure) return;
        const fresh = batch.filter((c) => !c.started);
        if (fresh.length > 0) {
          await this.db.runToolCall.createMany({
            data: fresh.map((c) => ({
              runId: this.fence.runId,
              ...completion(c),
              seq: c.seq,
              server: c.server,
              tool: c.tool,
              readOnly: c.readOnly,
              argsDigest: c.argsDigest,
              args: c.args,
            })),
          });
        }
        for (const c of batch.filter((x) => x.started)) {
          await this.db.runToolCall.updateMany({ where: { runId: this.fence.runId, seq: c.seq, outcome: "started" }, data: completion(c) });
        }
      })
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => {
        this.writing = false;
        // What completed during this write goes next, in one batch.
        this.writePending();
      });
  }

  /** Resolves when every added call is in the database; throws StorageRejected if a write failed. */
  async flush(): Promise<void> {
    this.writePending();
    for (let written = this.chain; ; written = this.chain) {
      await written;
      if (written === this.chain) break;
    }
    if (this.failure) throw new StorageRejected(`tool call records could not be stored (${errorText(this.failure)})`, { cause: this.failure });
  }
}

function completion(c: CallRow) {
  return {
    resultDigest: c.resultDigest,
    result: c.result === null ? undefined : c.result,
    durationMs: c.durationMs,
    outcome: c.outcome,
    error: c.error,
  };
}
