/**
 * Executes one queued run in the sandbox (DESIGN.md steps 6–9).
 *
 * Guarantees:
 * - a run is claimed once: `queued → running` is a conditional update (WHERE status = 'queued')
 *   in the same transaction as its audit event; a second executor gets nothing and walks away;
 * - the sandbox gets exactly the approved capability set, the JavaScript analysis produced, and
 *   copies of the datasets the run named (resolved at intake, verified by sha256 here);
 * - every tool call is recorded (tool, args/result digests and values, duration, outcome) as it
 *   completes — flushed in small batches, so the calls of a run whose executor dies are still on
 *   record — and the ordered calls are sealed into the audit chain by the terminal event's
 *   `toolCallsDigest`;
 * - the terminal state is written once, conditionally on `running`, with the whole envelope;
 * - while it runs, the executor heartbeats and polls `cancelRequestedAt`, aborting the sandbox when
 *   a cancel arrives from any process.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordAudit } from "@/lib/audit/record";
import { canonicalJson } from "@/lib/canonical-json";
import type { Db } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { CallTool, Envelope, JsonValue, RunRequest } from "@/lib/sandbox";

export type ExecutorDeps = {
  db: Db;
  /** Runs one script in the sandbox (cold or from the warm pool) with the configured isolation. */
  runScript(request: RunRequest): Promise<Envelope>;
  /** Calls an upstream tool through the broker. */
  callTool: CallTool;
  /** Identifies this executor in `Run.executorId`. */
  executorId: string;
  heartbeatMs?: number;
};

/** Bytes of one call's args or result kept in RunToolCall; digests always cover all of it. */
const MAX_STORED_CALL_BYTES = 64 * 1024;
const SYSTEM = { type: "system", name: "executor" } as const;

type CallRow = {
  seq: number;
  server: string;
  tool: string;
  argsDigest: string;
  resultDigest: string | null;
  args: unknown;
  result: unknown;
  durationMs: number;
  outcome: "ok" | "error";
  error: string | null;
};

function digest(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value ?? null)).digest("hex");
}

function keep(value: unknown): Prisma.InputJsonValue {
  const text = canonicalJson(value ?? null);
  return (Buffer.byteLength(text) <= MAX_STORED_CALL_BYTES ? JSON.parse(text) : { truncated: true, bytes: Buffer.byteLength(text) }) as Prisma.InputJsonValue;
}

/** The fields of a tool call that the audit chain seals, as stored in RunToolCall. */
export type SealedCall = { seq: number; server: string; tool: string; argsDigest: string; resultDigest: string | null; outcome: string };

export function toolCallsDigest(calls: readonly SealedCall[]): string {
  return digest(calls.map(({ seq, server, tool, argsDigest, resultDigest, outcome }) => ({ seq, server, tool, argsDigest, resultDigest, outcome })));
}

async function claim(db: Db, runId: string, executorId: string) {
  return db.$transaction(async (tx) => {
    const claimed = await tx.run.updateMany({
      where: { id: runId, status: "queued" },
      data: { status: "running", executorId, startedAt: new Date(), heartbeatAt: new Date() },
    });
    if (claimed.count === 0) return null;
    await recordAudit(tx, { actor: SYSTEM, action: "run.running", subject: { type: "run", id: runId }, data: { executorId } });
    return tx.run.findUniqueOrThrow({ where: { id: runId } });
  });
}

async function stageInputs(db: Db, inputs: { name: string; datasetId: string; sha256: string }[]) {
  const dir = await mkdtemp(join(tmpdir(), "airlock-inputs-"));
  const staged = [];
  for (const input of inputs) {
    const dataset = await db.dataset.findUniqueOrThrow({ where: { id: input.datasetId } });
    const actual = createHash("sha256").update(dataset.content).digest("hex");
    if (actual !== input.sha256) throw new Error(`dataset ${input.name} changed since the run was approved`);
    const path = join(dir, randomUUID());
    await writeFile(path, dataset.content, { mode: 0o400 });
    staged.push({ name: input.name, path });
  }
  return { dir, staged };
}

/**
 * Claims and runs a queued run to its terminal state. Returns false if another executor had it.
 * `shutdown` aborts the sandbox when this executor must stop (a draining worker past its grace
 * period); the run then fails explicitly with EXECUTOR_LOST instead of being left running.
 */
export async function executeRun(deps: ExecutorDeps, runId: string, shutdown?: AbortSignal): Promise<boolean> {
  const { db } = deps;
  const run = await claim(db, runId, deps.executorId);
  if (!run) return false;

  // A retried run (its executor was lost) keeps the calls of earlier attempts; number after them.
  const previous = await db.runToolCall.aggregate({ where: { runId }, _max: { seq: true } });
  const seqBase = previous._max.seq ?? 0;

  const controller = new AbortController();
  const onShutdown = () => controller.abort();
  shutdown?.addEventListener("abort", onShutdown);
  const calls: CallRow[] = [];
  const recorder = new CallRecorder(db, runId);
  const heartbeat = setInterval(() => {
    void db.run
      .update({ where: { id: runId }, data: { heartbeatAt: new Date() }, select: { cancelRequestedAt: true } })
      .then((row) => {
        if (row.cancelRequestedAt) controller.abort();
      })
      .catch(() => {});
  }, deps.heartbeatMs ?? 1000);

  let envelope: Envelope;
  let stagingDir: string | null = null;
  try {
    const { dir, staged } = await stageInputs(db, run.inputs as { name: string; datasetId: string; sha256: string }[]);
    stagingDir = dir;
    const callTool: CallTool = async (server, tool, args, signal) => {
      const seq = seqBase + calls.length + 1;
      const started = performance.now();
      const row: CallRow = { seq, server, tool, argsDigest: digest(args), resultDigest: null, args: keep(args), result: null, durationMs: 0, outcome: "ok", error: null };
      calls.push(row);
      try {
        const result = await deps.callTool(server, tool, args, signal);
        row.resultDigest = digest(result);
        row.result = keep(result);
        return result;
      } catch (error) {
        row.outcome = "error";
        row.error = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
        throw error;
      } finally {
        row.durationMs = Math.round(performance.now() - started);
        recorder.add(row);
      }
    };
    envelope = await deps.runScript({
      code: run.javascript ?? run.code,
      language: run.javascript ? "javascript" : run.language,
      inputs: staged,
      allowedTools: run.capabilitySet as string[],
      callTool,
      signal: controller.signal,
    });
  } catch (error) {
    envelope = {
      status: "failed",
      result: null,
      logs: [],
      error: { code: "SANDBOX_UNAVAILABLE", message: error instanceof Error ? error.message : String(error), untrusted: false },
      stats: { wallMs: 0, cpuMs: 0, peakRssMb: 0, toolCalls: calls.length },
      flags: [],
      truncated: false,
      isolation: { level: "strict", node: "", layers: { permissionModel: false, bubblewrap: false, prlimit: false, uid: null, cgroup: "none" } },
      artifacts: [],
    };
  } finally {
    clearInterval(heartbeat);
    if (stagingDir) await rm(stagingDir, { recursive: true, force: true });
  }
  shutdown?.removeEventListener("abort", onShutdown);
  if (controller.signal.aborted && envelope.status !== "succeeded") {
    envelope = shutdown?.aborted
      ? { ...envelope, status: "failed", error: { code: "EXECUTOR_LOST", message: "The executor shut down before the run finished.", untrusted: false } }
      : { ...envelope, status: "cancelled", error: { code: "CANCELLED", message: "Cancelled while running.", untrusted: false } };
  }
  await recorder.flush();
  await finish(db, runId, envelope);
  return true;
}

/**
 * Writes completed calls in batches, one insert at a time, in completion order. A failed write is
 * kept (never an unhandled rejection) and stops further writes; flush() reports it.
 */
class CallRecorder {
  private pending: CallRow[] = [];
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private failure: unknown = null;

  constructor(
    private readonly db: Db,
    private readonly runId: string,
  ) {}

  add(row: CallRow): void {
    this.pending.push(row);
    if (this.pending.length >= 100) this.writePending();
    else this.timer ??= setTimeout(() => this.writePending(), 200);
  }

  private writePending(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      await this.db.runToolCall.createMany({
        data: batch.map((c) => ({
          runId: this.runId,
          seq: c.seq,
          server: c.server,
          tool: c.tool,
          argsDigest: c.argsDigest,
          resultDigest: c.resultDigest,
          args: c.args as Prisma.InputJsonValue,
          result: c.result === null ? undefined : (c.result as Prisma.InputJsonValue),
          durationMs: c.durationMs,
          outcome: c.outcome,
          error: c.error,
        })),
      });
    }).catch((error: unknown) => {
      this.failure ??= error;
    });
  }

  /** Resolves when every added call is in the database; a failed write fails the run's finish. */
  async flush(): Promise<void> {
    this.writePending();
    await this.chain;
    if (this.failure) throw this.failure;
  }
}

/** Writes the terminal state, sealing every recorded call of the run (all attempts) into the chain. */
async function finish(db: Db, runId: string, envelope: Envelope): Promise<void> {
  const calls = await db.runToolCall.findMany({
    where: { runId },
    orderBy: { seq: "asc" },
    select: { seq: true, server: true, tool: true, argsDigest: true, resultDigest: true, outcome: true },
  });
  const sealed = toolCallsDigest(calls);
  await db.$transaction(async (tx) => {
    const written = await tx.run.updateMany({
      where: { id: runId, status: "running" },
      data: {
        status: envelope.status,
        finishedAt: new Date(),
        result: (envelope.result ?? undefined) as Prisma.InputJsonValue | undefined,
        error: envelope.error ?? undefined,
        stats: {
          ...envelope.stats,
          logs: envelope.logs,
          flags: envelope.flags,
          truncated: envelope.truncated,
          artifacts: envelope.artifacts.map(({ name, sizeBytes, sha256 }) => ({ name, sizeBytes, sha256 })),
        } as Prisma.InputJsonValue,
        isolation: envelope.isolation.level,
      },
    });
    if (written.count === 0) throw new Error(`run ${runId} was no longer running when its result arrived`);
    await recordAudit(tx, {
      actor: SYSTEM,
      action: `run.${envelope.status}`,
      subject: { type: "run", id: runId },
      data: {
        errorCode: envelope.error?.code ?? null,
        resultDigest: digest(envelope.result as JsonValue),
        toolCalls: calls.length,
        toolCallsDigest: sealed,
        isolation: envelope.isolation,
        stats: envelope.stats,
        flags: envelope.flags,
      },
    });
  });
}
