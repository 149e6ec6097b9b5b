/**
 * Fair share of the executors' slots, decided in PostgreSQL for the whole cluster.
 *
 * Every executor process registers its slots (its queue concurrency) in "Executor" and heartbeats
 * there; S is the sum of the live executors' slots. Before an executor claims a queued run, it
 * takes a slot for it (a "RunSlot" row naming the executor) and gives it back when the run ends.
 *
 * Guarantees:
 * - a run is deferred, instead of taking a slot, while its agent holds at least max(1, ⌊S/2⌋)
 *   slots and a queued run of another agent that is below that share waits. So one agent cannot
 *   keep every slot busy while others wait, and a slot never idles for fairness alone;
 * - the decision and the slot it takes are made in one transaction under one advisory lock shared
 *   by every executor, so two executors deciding at once cannot both give an agent its last slot;
 *   giving a slot back takes the same lock;
 * - a deferred run stays `queued` (its attempt untouched, its job completed, not failed) and waits
 *   with a "RunSlot" row without executor. Taking a slot wakes the other agents' waiting runs,
 *   giving one back and registering an executor wake all of them (the caller enqueues the ids
 *   returned); the maintenance sweep re-enqueues any queued run left behind;
 * - only live executors count: an executor whose heartbeat is older than EXECUTOR_LIVE_MS counts
 *   for neither S nor the slots its runs hold, and is pruned with its slots by the sweep; a slot
 *   whose run is no longer queued or running never counts.
 *
 * Refuses: nothing is refused here; a run that is no longer queued, or whose slot a live executor
 * already holds (a duplicate job), is `gone` and left alone.
 *
 * Executors and slots are scheduling state, like run heartbeats and queue jobs, and are not
 * audited; a run's first deferral is, as `run.deferred {held, share, slots}`.
 */
import { recordAudit } from "@/lib/audit/record";
import type { Db, Tx } from "@/lib/db";

/** How often an executor heartbeats its registration. */
export const EXECUTOR_HEARTBEAT_MS = 5_000;
/** An executor without a heartbeat for this long no longer counts. */
export const EXECUTOR_LIVE_MS = 30_000;

const SYSTEM = { type: "system", name: "fair-share" } as const;
const LIVE_SECONDS = EXECUTOR_LIVE_MS / 1000;

export type ExecutorRegistration = { id: string; name: string; slots: number };

export type SlotOutcome = { outcome: "held"; wake: string[] } | { outcome: "deferred" } | { outcome: "gone" };

type SlotState = {
  status: string;
  agentId: string;
  heldElsewhere: boolean;
  waiting: boolean;
  slots: number;
  share: number;
  held: number;
  othersWait: boolean;
  /** Other agents' runs waiting for a slot, oldest first (woken when this one takes a slot). */
  wake: string[];
  /** The decision; `held` means the statement took the slot. */
  outcome: SlotOutcome["outcome"];
};

/** One lock for every decision about slots, cluster-wide (a constant outside hashtext's int4 range). */
async function lockSlots(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7231004420)`;
}

/** Queued runs waiting for a slot, oldest first. */
async function waitingRuns(db: Db | Tx): Promise<string[]> {
  const rows = await db.$queryRaw<{ runId: string }[]>`
    SELECT w."runId" FROM "RunSlot" w JOIN "Run" r ON r.id = w."runId"
    WHERE w."executorId" IS NULL AND r.status = 'queued'
    ORDER BY w.since, w."runId"`;
  return rows.map((row) => row.runId);
}

/** Registers the executor or renews its heartbeat (database time). */
export async function heartbeatExecutor(db: Db, executor: ExecutorRegistration): Promise<void> {
  await db.$executeRaw`
    INSERT INTO "Executor" (id, name, slots) VALUES (${executor.id}::uuid, ${executor.name}, ${executor.slots})
    ON CONFLICT (id) DO UPDATE SET "heartbeatAt" = now()`;
}

/** Registers a new executor; returns the waiting runs to wake, since the cluster has more slots. */
export async function registerExecutor(db: Db, executor: ExecutorRegistration): Promise<string[]> {
  await heartbeatExecutor(db, executor);
  return waitingRuns(db);
}

/** Removes a stopped executor; the slots it still held go with it. */
export async function unregisterExecutor(db: Db, executorId: string): Promise<void> {
  await db.executor.deleteMany({ where: { id: executorId } });
}

/** Takes a slot of `executorId` for the queued run, or defers it (see the header). */
export async function takeSlot(db: Db, executorId: string, runId: string): Promise<SlotOutcome> {
  return db.$transaction(async (tx) => {
    await lockSlots(tx);
    // One statement decides (`outcome`) and, when the run may have a slot, takes it.
    const [state] = await tx.$queryRaw<SlotState[]>`
      WITH live AS (
        SELECT s."runId", r."agentId" FROM "RunSlot" s
        JOIN "Executor" e ON e.id = s."executorId"
        JOIN "Run" r ON r.id = s."runId"
        WHERE e."heartbeatAt" > now() - make_interval(secs => ${LIVE_SECONDS}) AND r.status IN ('queued', 'running')
      ),
      fair AS (
        SELECT c.slots, GREATEST(1, c.slots / 2) AS share
        FROM (SELECT COALESCE(SUM(slots), 0)::int AS slots FROM "Executor" WHERE "heartbeatAt" > now() - make_interval(secs => ${LIVE_SECONDS})) c
      ),
      state AS (
        SELECT r.status::text AS status, r."agentId",
          EXISTS (SELECT 1 FROM live WHERE live."runId" = r.id) AS "heldElsewhere",
          EXISTS (SELECT 1 FROM "RunSlot" w WHERE w."runId" = r.id AND w."executorId" IS NULL) AS waiting,
          fair.slots, fair.share,
          (SELECT count(*)::int FROM live WHERE live."agentId" = r."agentId") AS held,
          EXISTS (
            SELECT 1 FROM "Run" o
            WHERE o.status = 'queued' AND o."agentId" <> r."agentId"
              AND NOT EXISTS (SELECT 1 FROM live WHERE live."runId" = o.id)
              AND (SELECT count(*) FROM live WHERE live."agentId" = o."agentId") < fair.share
          ) AS "othersWait",
          ARRAY(
            SELECT w."runId"::text FROM "RunSlot" w JOIN "Run" q ON q.id = w."runId"
            WHERE w."executorId" IS NULL AND q.status = 'queued' AND q."agentId" IS DISTINCT FROM r."agentId"
            ORDER BY w.since, w."runId"
          ) AS wake
        FROM "Run" r CROSS JOIN fair
        WHERE r.id = ${runId}::uuid
      ),
      decided AS (
        SELECT state.*, CASE
          WHEN state.status <> 'queued' OR state."heldElsewhere" THEN 'gone'
          WHEN state.held >= state.share AND state."othersWait" THEN 'deferred'
          ELSE 'held' END AS outcome
        FROM state
      ),
      took AS (
        INSERT INTO "RunSlot" ("runId", "executorId")
        SELECT ${runId}::uuid, ${executorId}::uuid FROM decided WHERE outcome = 'held'
        ON CONFLICT ("runId") DO UPDATE SET "executorId" = EXCLUDED."executorId", since = now()
      )
      SELECT * FROM decided`;
    if (!state || state.status !== "queued") {
      await tx.runSlot.deleteMany({ where: { runId, executorId: null } });
      return { outcome: "gone" };
    }
    if (state.outcome === "gone") return { outcome: "gone" };
    if (state.outcome === "deferred") {
      if (!state.waiting) {
        await tx.$executeRaw`
          INSERT INTO "RunSlot" ("runId", "executorId") VALUES (${runId}::uuid, NULL)
          ON CONFLICT ("runId") DO UPDATE SET "executorId" = NULL, since = now()`;
        await recordAudit(tx, {
          actor: SYSTEM,
          action: "run.deferred",
          subject: { type: "run", id: runId },
          data: { held: state.held, share: state.share, slots: state.slots },
        });
      }
      return { outcome: "deferred" };
    }
    return { outcome: "held", wake: state.wake };
  });
}

/** Gives the run's slot back; returns the waiting runs to wake. */
export async function releaseSlot(db: Db, executorId: string, runId: string): Promise<string[]> {
  return db.$transaction(async (tx) => {
    await lockSlots(tx);
    await tx.runSlot.deleteMany({ where: { runId, executorId } });
    return waitingRuns(tx);
  });
}

/** Forgets a run's slot whoever held it: for a lost run the sweep puts back in the queue. */
export async function forgetSlot(db: Db, runId: string): Promise<void> {
  await db.runSlot.deleteMany({ where: { runId } });
}

/** The sweep's part: executors silent for EXECUTOR_LIVE_MS as of `now` (with their slots), and slots of runs that ended. */
export async function pruneSlots(db: Db, now: Date): Promise<void> {
  await db.executor.deleteMany({ where: { heartbeatAt: { lt: new Date(now.getTime() - EXECUTOR_LIVE_MS) } } });
  await db.runSlot.deleteMany({ where: { run: { status: { notIn: ["queued", "running"] } } } });
}
