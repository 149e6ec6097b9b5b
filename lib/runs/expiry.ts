/**
 * The maintenance sweep's expiry of waits for people: pending reviews and held results
 * (pending_release) whose deadline passed become `expired`.
 * Part of the run lifecycle (a state transition), so the run queue can call it without reaching
 * up into the review layer.
 */
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { transitionRun } from "./states";

/**
 * Expires pending reviews and held results whose deadline passed: each run separately,
 * conditionally on still waiting and past its deadline, with its audit event. A held result's run
 * keeps the end it had when it ran. Safe to run from any number of schedulers at once. Returns the
 * ids it expired.
 */
export async function expireReviews(db: Db, now: Date = new Date()): Promise<string[]> {
  const expired: string[] = [];
  const actor: Actor = { type: "system", name: "review-expiry" };
  const reviews = await db.run.findMany({
    where: { status: "pending_review", reviewExpiresAt: { lt: now } },
    select: { id: true, reviewExpiresAt: true },
    orderBy: { reviewExpiresAt: "asc" },
    take: 500,
  });
  for (const run of reviews) {
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
  const holds = await db.run.findMany({
    where: { status: "pending_release", releaseExpiresAt: { lt: now } },
    select: { id: true, releaseExpiresAt: true },
    orderBy: { releaseExpiresAt: "asc" },
    take: 500,
  });
  for (const run of holds) {
    const done = await db.$transaction((tx) =>
      transitionRun(tx, actor, {
        runId: run.id,
        from: "pending_release",
        to: "expired",
        where: { releaseExpiresAt: { lt: now } },
        audit: { releaseExpiresAt: run.releaseExpiresAt?.toISOString() ?? null },
      }),
    );
    if (done) expired.push(run.id);
  }
  return expired;
}
