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
 * - arguments and results are stored as lib/audit/stored-calls.ts `storedJson` makes them (the
 *   canonical text their digests cover, size-capped); they are already normalized and screened by
 *   the caller (lib/untrusted/storable-text.ts, ./gate.ts).
 */
import { insertToolCalls, type StoredJson } from "@/lib/audit/stored-calls";
import type { Db } from "@/lib/db";

export type CallRow = {
  seq: number;
  server: string;
  tool: string;
  readOnly: boolean;
  args: StoredJson;
  result: StoredJson | null;
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
        await insertToolCalls(tx, runId, [{ ...row, result: null, durationMs: 0, outcome: "started", error: null, phase: "apply" }]);
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
        if (fresh.length > 0)
          await insertToolCalls(
            this.db,
            this.fence.runId,
            fresh.map((c) => ({ ...c, phase: "apply" })),
          );
        for (const c of batch.filter((x) => x.started)) await completeToolCall(this.db, this.fence.runId, c);
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

/** Completes a "started" call once (the append-only trigger allows nothing else). */
async function completeToolCall(db: Db, runId: string, c: CallRow): Promise<void> {
  await db.$executeRaw`
    UPDATE "RunToolCall" SET "resultDigest" = ${c.result?.digest ?? null}, result = ${c.result?.text ?? null}::json,
           "durationMs" = ${c.durationMs}, outcome = ${c.outcome}, error = ${c.error}
    WHERE "runId" = ${runId}::uuid AND seq = ${c.seq} AND outcome = 'started'`;
}
