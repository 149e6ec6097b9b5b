/**
 * What happens to a run whose executor stopped heartbeating: the one place that decides between
 * an automatic retry and a human.
 *
 * Guarantees (each decision is made under the run's row lock, so it cannot race the executor's
 * "started" records, which take the same lock, lib/runs/call-recorder.ts):
 * - a run whose cancel was requested ends `cancelled`, for good;
 * - a run with any recorded call to a tool that is not read-only (started or completed) ends
 *   `failed` with EXECUTOR_LOST: that call may have had an effect, so only a human may decide to
 *   run it again;
 * - a run already retried once ends `failed` with EXECUTOR_LOST;
 * - otherwise nothing could have had an effect: it goes back to `queued` with attempt 2, audited as
 *   `run.requeued {attempt, reason}`, and is enqueued again.
 */
import { REQUEUED_ACTION } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
import { transitionRun } from "./states";

const SYSTEM = { type: "system", name: "maintenance" } as const;
export const MAX_ATTEMPTS = 2;

export type LostRunOutcome = "cancelled" | "failed" | "requeued" | "gone";

/** Ends or requeues one run found lost at `now` (heartbeat older than `cutoff`). */
export async function recoverLostRun(db: Db, runId: string, cutoff: Date, now: Date): Promise<LostRunOutcome> {
  return db.$transaction(async (tx) => {
    const locked = await tx.$queryRaw<{ attempt: number; executorId: string | null; cancelRequestedAt: Date | null }[]>`
      SELECT attempt, "executorId", "cancelRequestedAt" FROM "Run"
      WHERE id = ${runId}::uuid AND status = 'running' AND "heartbeatAt" < ${cutoff} FOR UPDATE`;
    const run = locked[0];
    if (!run) return "gone";
    // A preview's intercepted writes were never made: only calls of the run itself count.
    const effectful = await tx.runToolCall.count({ where: { runId, readOnly: false, phase: "apply" } });
    const base = { runId, from: "running" as const, where: { attempt: run.attempt } };
    const lost = { reason: "EXECUTOR_LOST", executorId: run.executorId, attempt: run.attempt };

    if (run.cancelRequestedAt) {
      await transitionRun(tx, SYSTEM, {
        ...base,
        to: "cancelled",
        data: {
          finishedAt: now,
          error: { code: "CANCELLED", message: "Cancelled; the executor running it had stopped, so it was not run again.", untrusted: false },
        },
        audit: lost,
      });
      return "cancelled";
    }
    if (effectful > 0 || run.attempt >= MAX_ATTEMPTS) {
      const why =
        effectful > 0
          ? `it had made or started ${effectful} call(s) to tools that are not read-only, which may have had an effect`
          : `it was already retried once`;
      await transitionRun(tx, SYSTEM, {
        ...base,
        to: "failed",
        data: {
          finishedAt: now,
          error: {
            code: "EXECUTOR_LOST",
            message: `The executor running this run stopped. It was not retried because ${why}; a person must decide whether to submit it again.`,
            untrusted: false,
          },
        },
        audit: { ...lost, effectfulCalls: effectful, retried: false },
      });
      return "failed";
    }
    await transitionRun(tx, SYSTEM, {
      ...base,
      to: "queued",
      action: REQUEUED_ACTION,
      data: { attempt: run.attempt + 1, executorId: null, heartbeatAt: null },
      audit: { attempt: run.attempt + 1, reason: "EXECUTOR_LOST", executorId: run.executorId },
    });
    return "requeued";
  });
}
