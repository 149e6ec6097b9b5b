/**
 * Which runs wait for people: the review queue's membership, one rule for the queue, its badge
 * (lib/review/queue-presenter.ts) and the dashboard (./dashboard.ts).
 *
 * - runs pending review, and results a release policy holds (pending_release), until the expiry
 *   sweep ends them at their deadlines (lib/runs/expiry.ts);
 * - runs whose declared check failed (check_failed) and whose result nobody has released, for as
 *   long as a review waits (AIRLOCK_REVIEW_TTL_HOURS) after the run ended, unless a release policy
 *   forbids releasing it (its release decision `deny`, as lib/review/release.ts pendingRelease
 *   reads it): reviewers may release such a result, but need not, so it leaves the queue then
 *   (its run page still offers the release).
 */
import { env } from "@/lib/env";
import { Prisma } from "@/lib/generated/prisma/client";

export function inReviewQueue(now: Date = new Date()): Prisma.RunWhereInput {
  const since = new Date(now.getTime() - env().AIRLOCK_REVIEW_TTL_HOURS * 3_600_000);
  return {
    OR: [
      { status: { in: ["pending_review", "pending_release"] } },
      {
        status: "check_failed",
        releasedAt: null,
        finishedAt: { gte: since },
        OR: [{ releaseDecision: { equals: Prisma.DbNull } }, { NOT: { releaseDecision: { path: ["decision"], equals: "deny" } } }],
      },
    ],
  };
}
