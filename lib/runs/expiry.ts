/**
 * The maintenance sweep's review expiry: pending reviews whose deadline passed become `expired`.
 * Part of the run lifecycle (a state transition), so the run queue can call it without reaching
 * up into the review layer.
 */
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { transitionRun } from "./states";

/**
 * Expires pending reviews whose deadline passed: each run separately, conditionally on still
 * being `pending_review` and past its deadline, with its audit event. Safe to run from any number
 * of schedulers at once. Returns the ids it expired.
 */
export async function expireReviews(db: Db, now: Date = new Date()): Promise<string[]> {
  const due = await db.run.findMany({
    where: { status: "pending_review", reviewExpiresAt: { lt: now } },
    select: { id: true, reviewExpiresAt: true },
    orderBy: { reviewExpiresAt: "asc" },
    take: 500,
  });
  const expired: string[] = [];
  const actor: Actor = { type: "system", name: "review-expiry" };
  for (const run of due) {
    const done = await db.$transaction((tx) =>
      transitionRun(tx, actor, {
        runId: run.id,
        from: "pending_review",
        to: "expired",
        where: { reviewExpiresAt: { lt: now } },
        data: { finishedAt: now },
        audit: { reviewExpiresAt: run.reviewExpiresAt?.toISOString() ?? null },
      }),
    );
    if (done) expired.push(run.id);
  }
  return expired;
}
