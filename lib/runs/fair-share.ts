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
 * - the decision and the slot it takes are made under one advisory lock shared by every executor,
 *   in one statement (airlock_take_slot(), whose queries read what was committed before the lock
 *   was granted), so two executors deciding at once cannot both give an agent its last slot;
 *   giving a slot back takes the same lock (airlock_release_slot()). A run intake stores claimed
 *   (takeSlotAtIntake) is decided in intake's transaction, which holds the lock until the run and
 *   its slot are committed;
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
  /** The decision; `held`: the slot is taken (by the statement, for a stored run and a new one alike). */
  outcome: SlotOutcome["outcome"];
};

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

/**
 * The decision for one queued run, made under the slots' lock by airlock_take_slot() (migration
 * 20261203120410_fair_share_in_one_statement) in one statement: for a stored run, whose slot it
 * takes when the decision is `held`; or for a run intake is storing (`newRunAgent`, its agent),
 * whose slot the caller inserts once the run is stored. Undefined when a stored run does not exist.
 */
async function decideSlot(tx: Tx, executorId: string, runId: string, newRunAgent: string | null): Promise<SlotState | undefined> {
  const [state] = await tx.$queryRaw<SlotState[]>`
    SELECT * FROM "airlock_take_slot"(${runId}::uuid, ${executorId}::uuid, ${newRunAgent}::uuid, ${LIVE_SECONDS}::integer)`;
  return state;
}

/** A deferred run waits with a slot row without executor; its first deferral is audited. */
async function deferRun(tx: Tx, runId: string, state: SlotState): Promise<void> {
  if (state.waiting) return;
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

/** Takes a slot of `executorId` for the queued run, or defers it (see the header). */
export async function takeSlot(db: Db, executorId: string, runId: string): Promise<SlotOutcome> {
  return db.$transaction(async (tx) => {
    const state = await decideSlot(tx, executorId, runId, null);
    if (!state || state.status !== "queued") {
      await tx.runSlot.deleteMany({ where: { runId, executorId: null } });
      return { outcome: "gone" };
    }
    if (state.outcome === "gone") return { outcome: "gone" };
    if (state.outcome === "deferred") {
      await deferRun(tx, runId, state);
      return { outcome: "deferred" };
    }
    return { outcome: "held", wake: state.wake };
  });
}

/**
 * For a run intake is storing `queued`, in intake's transaction: the same decision as takeSlot's
 * for a run nothing holds or awaits a slot for yet, its slot taken by the decision when `held`.
 * `store(held)` then stores the run (claimed by the caller when `held`), or, deferred, the run
 * waits for a slot. `gone` when
 * this executor is not registered (another process pruned it while its heartbeat stalled): the
 * run is stored queued, for the queue.
 */
export async function takeSlotAtIntake<T>(
  tx: Tx,
  executorId: string,
  run: { id: string; agentId: string },
  store: (held: boolean) => Promise<T>,
): Promise<{ stored: T; slot: SlotOutcome }> {
  // A slot `held` is taken by the decision's own statement, before the run's row is stored: the
  // slot's foreign key is checked at commit (migration 20261205223943_slot_taken_with_new_run).
  const state = (await decideSlot(tx, executorId, run.id, run.agentId))!;
  const held = state.outcome === "held";
  const stored = await store(held);
  if (state.outcome === "gone") return { stored, slot: { outcome: "gone" } };
  if (state.outcome === "deferred") {
    await deferRun(tx, run.id, state);
    return { stored, slot: { outcome: "deferred" } };
  }
  return { stored, slot: { outcome: "held", wake: state.wake } };
}

/** Gives the run's slot back; returns the waiting runs to wake. */
export async function releaseSlot(db: Db, executorId: string, runId: string): Promise<string[]> {
  // One statement under the slots' lock (airlock_release_slot(), the same migration as airlock_take_slot()).
  const rows = await db.$queryRaw<{ runId: string }[]>`SELECT w::text AS "runId" FROM "airlock_release_slot"(${runId}::uuid, ${executorId}::uuid) AS w`;
  return rows.map((row) => row.runId);
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
