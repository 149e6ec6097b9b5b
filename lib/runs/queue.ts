/**
 * The run job queue: graphile-worker on the same PostgreSQL.
 *
 * Why graphile-worker rather than pg-boss: jobs are picked up through LISTEN/NOTIFY (milliseconds,
 * not a polling interval), it has a crontab for the maintenance sweep, it runs its own schema
 * migrations, and a job can be added with plain SQL in any transaction. Both are PostgreSQL-only
 * and fine at our volume; the deciding point is latency for auto-approved runs, which an agent
 * waits on.
 *
 * Exactly-once does not rest on the queue: a job only carries a run id, and the executor claims
 * the run with a conditional update (queued → running), or intake stores it claimed (below). A
 * duplicate or retried job finds nothing to claim. Job keys (= run id) keep the queue itself from filling with duplicates.
 *
 * A run this process approves is started at once when it has an idle slot (`start`: fewer runs
 * executing here than its concurrency), without the round trip through the job table; it takes its
 * slot and is claimed exactly as a job would be, and drains with the jobs on stop. Jobs and runs
 * started at once share the process's `concurrency` slots: a job that finds them taken waits for
 * one, and one still waiting when the executor stops is handed back to the queue. Intake goes one
 * step further (`reserve`, LocalStart): it reserves an idle slot before its transaction and stores
 * the run claimed in it, so the run needs neither a job nor a claim of its own.
 *
 * Before the claim, a job takes one of the cluster's executor slots for its run, or defers the run
 * while its agent has its fair share and another agent's run waits (./fair-share.ts): the job then
 * completes without claiming, and the run is enqueued again when a slot is taken or given back.
 * Each queue registers its slots and heartbeats them while it runs.
 *
 * Plan previews (./preview.ts) are jobs of their own (`preview_run`, keyed by run id); a preview
 * is claimed conditionally on `previewing` and no live heartbeat, so a duplicate job finds nothing.
 *
 * The maintenance sweep (every minute, and on start) expires stale reviews, re-enqueues queued
 * runs whose job was lost (deferred ones included) and previews whose job or executor was lost (a
 * preview writes nothing, so running it again is safe), hands runs whose executor stopped heartbeating
 * to ./recovery.ts (retried at most once, and only when nothing with an effect could have
 * happened), and prunes silent executors and the slots of ended runs. Every minute
 * (CHECKPOINT_INTERVAL_MINUTES) one worker verifies the audit chain since the last checkpoint and,
 * when events were appended since, signs a new one (lib/audit). Every hour one worker runs the
 * retention job (lib/audit/retention.ts) with the config's windows: it purges expired payloads.
 */
import { randomUUID } from "node:crypto";
import { run as runWorker, type Runner } from "graphile-worker";
import { z } from "zod";
import { CHECKPOINT_INTERVAL_MINUTES, checkpointConfigFromEnv } from "@/lib/audit/checkpoints";
import { RETENTION_CRON, purgeExpired } from "@/lib/audit/retention";
import type { RetentionDays } from "@/lib/audit/retention-windows";
import { checkpointAudited } from "@/lib/audit/service";
import { expireReviews } from "./expiry";
import type { Db, Tx } from "@/lib/db";
import type { Run } from "@/lib/generated/prisma/client";
import { claimStep, executeClaimedRun, executeRun, type ExecutorDeps } from "./executor";
import type { CreationStep } from "./states";
import { PREVIEW_LOST_AFTER_MS, previewRun, type PreviewDeps } from "./preview";
import {
  EXECUTOR_HEARTBEAT_MS,
  forgetSlot,
  heartbeatExecutor,
  pruneSlots,
  registerExecutor,
  releaseSlot,
  takeSlot,
  takeSlotAtIntake,
  unregisterExecutor,
  type SlotOutcome,
} from "./fair-share";
import { quietQueueLogger } from "@/lib/db/queue-logger";
import { recoverLostRun } from "./recovery";

export const EXECUTE_RUN = "execute_run";
export const PREVIEW_RUN = "preview_run";
export const MAINTENANCE = "runs_maintenance";
export const AUDIT_CHECKPOINT = "audit_checkpoint";
export const RETENTION_PURGE = "retention_purge";

const payloadSchema = z.object({ runId: z.uuid() }).strict();

export type RunQueue = {
  enqueue(runId: string): Promise<void>;
  /**
   * Starts a queued run at once when this process has an idle executor slot, through the same
   * slot (fair share) and conditional claim as a job; otherwise enqueues it. Never throws.
   */
  start(runId: string): void;
  /** An idle executor slot of this process for a run intake stores claimed (LocalStart), or null when none is idle. */
  reserve(): LocalStart | null;
  enqueuePreview(runId: string): Promise<void>;
  /** Stops taking jobs and waits for the runs in flight to reach a terminal state. */
  stop(): Promise<void>;
};

/**
 * One of this process's executor slots, reserved for a run intake is storing queued. Intake takes
 * the run's cluster slot and claims it in its own transaction (`claimAtIntake`); after the commit,
 * the run it claimed is handed to `begin`, and a reservation it did not use goes back (`giveBack`).
 * Exactly one of the two is called.
 */
export type LocalStart = {
  /** Stores the run through `store` (given the claim's step when the run may take a slot), in intake's transaction `tx`. */
  claimAtIntake<T>(
    tx: Tx,
    run: { id: string; agentId: string },
    store: (claim: CreationStep | null) => Promise<T>,
  ): Promise<{ stored: T; outcome: SlotOutcome["outcome"] }>;
  /** Executes the run `claimAtIntake` claimed, once its transaction committed. */
  begin(run: Run): void;
  giveBack(): void;
};

export type MaintenanceOptions = {
  /** A running run whose heartbeat is older than this is considered lost. */
  heartbeatTimeoutMs: number;
  /** A queued run older than this without progress is enqueued again. */
  requeueAfterMs: number;
};

export const DEFAULT_MAINTENANCE: MaintenanceOptions = { heartbeatTimeoutMs: 30_000, requeueAfterMs: 30_000 };

export type Enqueue = { execute(runId: string): Promise<void>; preview(runId: string): Promise<void> };

/** One sweep; returns what it did. Safe to run from any number of processes at once. */
export async function runMaintenance(db: Db, enqueue: Enqueue, options: MaintenanceOptions, now = new Date()) {
  const expired = (await expireReviews(db, now)).length;
  const lostCutoff = new Date(now.getTime() - options.heartbeatTimeoutMs);
  const lost = await db.run.findMany({ where: { status: "running", heartbeatAt: { lt: lostCutoff } }, select: { id: true } });
  let failed = 0;
  let retried = 0;
  let cancelled = 0;
  for (const run of lost) {
    const outcome = await recoverLostRun(db, run.id, lostCutoff, now);
    if (outcome === "requeued") {
      retried++;
      await forgetSlot(db, run.id);
      await enqueue.execute(run.id);
    } else if (outcome === "failed") failed++;
    else if (outcome === "cancelled") cancelled++;
  }
  const stale = await db.run.findMany({
    where: { status: "queued", updatedAt: { lt: new Date(now.getTime() - options.requeueAfterMs) } },
    select: { id: true },
  });
  for (const run of stale) await enqueue.execute(run.id);
  const lostPreviews = await db.run.findMany({
    where: {
      status: "previewing",
      OR: [
        { heartbeatAt: { lt: new Date(now.getTime() - PREVIEW_LOST_AFTER_MS) } },
        { heartbeatAt: null, updatedAt: { lt: new Date(now.getTime() - options.requeueAfterMs) } },
      ],
    },
    select: { id: true },
  });
  for (const run of lostPreviews) await enqueue.preview(run.id);
  await pruneSlots(db, now);
  return { expired, failed, retried, cancelled, requeued: stale.length, previews: lostPreviews.length };
}

export async function startRunQueue(options: {
  databaseUrl: string;
  executor: Omit<ExecutorDeps, "db"> & Pick<PreviewDeps, "tool" | "argumentsProblem" | "onPendingReview">;
  db: Db;
  concurrency: number;
  /** How long stop() lets runs in flight finish before aborting them (they then fail EXECUTOR_LOST). */
  drainMs?: number;
  maintenance?: MaintenanceOptions;
  /** The retention windows (the config's `retention.days`) the hourly purge applies. */
  retention: RetentionDays;
}): Promise<RunQueue> {
  const maintenance = options.maintenance ?? DEFAULT_MAINTENANCE;
  let runner: Runner | null = null;
  const enqueue = async (runId: string) => {
    if (!runner) throw new Error("the run queue is not started");
    await runner.addJob(EXECUTE_RUN, { runId }, { jobKey: `run:${runId}`, maxAttempts: 3 });
  };
  const enqueuePreview = async (runId: string) => {
    if (!runner) throw new Error("the run queue is not started");
    await runner.addJob(PREVIEW_RUN, { runId }, { jobKey: `preview:${runId}`, maxAttempts: 3 });
  };
  const enqueueBoth: Enqueue = { execute: enqueue, preview: enqueuePreview };
  // A run left waiting by a failed wake is enqueued again by the maintenance sweep.
  const wake = (runIds: string[]) => {
    for (const runId of runIds) enqueue(runId).catch((error: unknown) => console.error(`run ${runId}: waking it failed`, error));
  };
  const executor = { id: randomUUID(), name: options.executor.executorId, slots: options.concurrency };
  const waiting = await registerExecutor(options.db, executor);
  const heartbeat = setInterval(() => {
    heartbeatExecutor(options.db, executor).catch((error: unknown) => console.error("executor heartbeat failed", error));
  }, EXECUTOR_HEARTBEAT_MS);
  heartbeat.unref();
  const unregister = async () => {
    clearInterval(heartbeat);
    await unregisterExecutor(options.db, executor.id);
  };
  // This process's executor slots, shared by jobs and runs started at once, so it never executes
  // more than `concurrency` runs: a job that finds them taken waits for one (first come, first
  // served), as it would for a graphile slot.
  let free = options.concurrency;
  const slotWaiters: (() => void)[] = [];
  const startedAtOnce = new Set<Promise<void>>();
  const draining = new AbortController();
  const freeSlot = () => {
    const next = slotWaiters.shift();
    if (next) next();
    else free++;
  };
  const giveSlotBack = (runId: string) =>
    releaseSlot(options.db, executor.id, runId).then(wake, (error: unknown) => console.error(`run ${runId}: giving its slot back failed`, error));
  /** Executes a queued run in a local slot it already holds (`free` was taken for it). */
  const execute = async (runId: string, abort: AbortSignal) => {
    try {
      const slot = await takeSlot(options.db, executor.id, runId);
      if (slot.outcome !== "held") return;
      wake(slot.wake);
      try {
        await executeRun({ db: options.db, ...options.executor }, runId, abort);
      } finally {
        await giveSlotBack(runId);
      }
    } finally {
      freeSlot();
    }
  };
  /** Runs that intake claimed for a reserved slot, tracked from the reservation so stop() waits for them too. */
  const track = (work: Promise<void>) => {
    startedAtOnce.add(work);
    void work.finally(() => startedAtOnce.delete(work));
  };
  /** Takes an idle local slot for a run started at once (not a job's); false when none is idle or the executor stops. */
  const takeIdleSlot = (): boolean => {
    if (!runner || draining.signal.aborted || free === 0) return false;
    free--;
    return true;
  };
  const reserve = (): LocalStart | null => {
    if (!takeIdleSlot()) return null;
    let settle!: (work: Promise<void>) => void;
    track(new Promise<void>((resolve) => (settle = (work) => void work.finally(resolve))));
    let wakeAfter: string[] = [];
    return {
      async claimAtIntake(tx, run, store) {
        const taken = await takeSlotAtIntake(tx, executor.id, run, (held) => store(held ? claimStep(options.executor.executorId) : null));
        if (taken.slot.outcome === "held") wakeAfter = taken.slot.wake;
        return { stored: taken.stored, outcome: taken.slot.outcome };
      },
      begin(run) {
        wake(wakeAfter);
        // A run stored claimed has no calls before its own.
        const work = executeClaimedRun({ db: options.db, ...options.executor }, run, 0, draining.signal)
          .catch((error: unknown) => console.error(`run ${run.id}: executing it failed; the maintenance sweep recovers it`, error))
          .finally(() => giveSlotBack(run.id))
          .finally(freeSlot);
        settle(work);
      },
      giveBack() {
        freeSlot();
        settle(Promise.resolve());
      },
    };
  };
  const start = (runId: string) => {
    if (!takeIdleSlot()) {
      enqueue(runId).catch((error: unknown) => console.error(`run ${runId}: enqueue failed`, error));
      return;
    }
    // A start that fails (the database, say) is retried as a job; one lost with the process is
    // queued still, and the maintenance sweep enqueues it.
    const started = execute(runId, draining.signal).catch((error: unknown) => {
      console.error(`run ${runId}: starting it failed; it is enqueued`, error);
      return enqueue(runId).catch((again: unknown) => console.error(`run ${runId}: enqueue failed`, again));
    });
    track(started);
  };
  runner = await runWorker({
    connectionString: options.databaseUrl,
    concurrency: options.concurrency,
    noHandleSignals: true,
    gracefulShutdownAbortTimeout: options.drainMs ?? 60_000,
    logger: quietQueueLogger,
    crontab: `* * * * * ${MAINTENANCE}\n*/${CHECKPOINT_INTERVAL_MINUTES} * * * * ${AUDIT_CHECKPOINT}\n${RETENTION_CRON} ${RETENTION_PURGE}`,
    taskList: {
      [EXECUTE_RUN]: async (payload, helpers) => {
        const { runId } = payloadSchema.parse(payload);
        if (free > 0) free--;
        else await new Promise<void>((resolve) => slotWaiters.push(resolve));
        if (runner === null || helpers.abortSignal.aborted) {
          // The executor began stopping while this job waited: another executor takes the run.
          freeSlot();
          await helpers.addJob(EXECUTE_RUN, { runId }, { jobKey: `run:${runId}`, maxAttempts: 3 });
          return;
        }
        await execute(runId, helpers.abortSignal);
      },
      [PREVIEW_RUN]: async (payload, helpers) => {
        const { runId } = payloadSchema.parse(payload);
        await previewRun({ db: options.db, ...options.executor }, runId, helpers.abortSignal);
      },
      [MAINTENANCE]: async () => {
        await runMaintenance(options.db, enqueueBoth, maintenance);
      },
      [AUDIT_CHECKPOINT]: async () => {
        const { report } = await checkpointAudited(options.db, { type: "system", name: "audit-checkpointer" }, checkpointConfigFromEnv());
        if (!report.ok) console.error(`audit chain verification failed: ${JSON.stringify(report.broken)}`);
      },
      [RETENTION_PURGE]: async () => {
        await purgeExpired(options.db, { asOf: new Date(), days: options.retention });
      },
    },
  }).catch(async (error: unknown) => {
    await unregister();
    throw error;
  });
  await runMaintenance(options.db, enqueueBoth, maintenance).catch((error: unknown) => console.error("run maintenance failed", error));
  wake(waiting);
  return {
    enqueue,
    start,
    reserve,
    enqueuePreview,
    async stop() {
      const runs = runner;
      runner = null;
      // Runs started at once drain as jobs do: past the grace period they are aborted (EXECUTOR_LOST).
      const grace = setTimeout(() => draining.abort(), options.drainMs ?? 60_000);
      await Promise.all([runs?.stop(), Promise.all([...startedAtOnce])]);
      clearTimeout(grace);
      await unregister();
    },
  };
}

/** Codes of a connection to PostgreSQL that was refused or cut (a restart, a network fault), not of a query it ran. */
const CONNECTION_LOST = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "57P01", "57P02", "57P03", "08000", "08003", "08006"]);
/** Frames of the job queue's own database calls (graphile-worker over node-postgres). */
const QUEUE_FRAMES = /node_modules\/(?:graphile-worker|pg-pool|pg)\//;

/** A lost or refused PostgreSQL connection, met by one of the job queue's own calls. */
export function isQueueConnectionLoss(reason: unknown): boolean {
  const { code, message, stack } = (reason ?? {}) as { code?: unknown; message?: unknown; stack?: unknown };
  const lost = (typeof code === "string" && CONNECTION_LOST.has(code)) || (typeof message === "string" && /^Connection terminated/.test(message));
  return lost && typeof stack === "string" && QUEUE_FRAMES.test(stack);
}

/**
 * For a process that executes runs outside Next (`npm run worker`). graphile-worker completes and
 * fails a job without awaiting the database call (its worker's `completeJob(job)`), and retries it
 * only on a few codes: with PostgreSQL unreachable (a restart refuses connections) that rejection
 * is unhandled, and Node would end the process, aborting every run in flight in it. A job is only
 * a wake-up (exactly-once rests on the executor's claim): one whose completion was lost stays
 * locked until graphile-worker's lock expires, then finds nothing to claim. So such a rejection is
 * logged and the process carries on, as Next does in the web process; any other unhandled
 * rejection still ends it.
 */
export function surviveConnectionLoss(log: (line: string) => void = console.error): void {
  process.on("unhandledRejection", (reason) => {
    if (!isQueueConnectionLoss(reason)) throw reason;
    log(`airlock: the job queue lost its database connection (${reason instanceof Error ? reason.message : String(reason)}); carrying on`);
  });
}
