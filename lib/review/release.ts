/**
 * Releasing a withheld result. Two kinds of run keep their result for the audit log and withhold it
 * from the agent (lib/runs/service.ts presentRun) until reviewers release it:
 * - `check_failed`: a check the script declared failed; released, the run stays check_failed and
 *   its checks stay on record;
 * - `pending_release`: it succeeded, and a release policy holds the result
 *   (lib/runs/release-decision.ts); released, the run ends `succeeded`; withheld by a reviewer, it
 *   ends `withheld`; nobody deciding before `releaseExpiresAt`, it ends `expired` (lib/runs/expiry.ts).
 *
 * releaseResult and withholdResult guarantee:
 * - only a person holding `runs:review`, in the reviewer role policy named (the run's for a
 *   check_failed run, the release decision's for a held one), not the owner of the run's agent,
 *   before the hold's deadline; one release per person (a ResultRelease row, unique per run and
 *   reviewer, append-only); the same rules and words as decideRun (./decision-rules.ts), with
 *   "waiting for release" in place of "waiting for review";
 * - a reason is required, to release as to withhold;
 * - bound to what they saw: the digest of the stored result (`seen.resultDigest`) is compared with
 *   the row on the server; a difference is refused (conflict);
 * - quorum: the result is released when distinct releases reach the quorum (the run's approvals
 *   for check_failed, the release decision's for a held result; at least one); then `releasedAt`
 *   is set, once, with a `run.result_released` event, in the transaction that locked the run (the
 *   database refuses a releasedAt without that event); one withhold ends a held result, as one
 *   rejection ends a review.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { runColumn } from "@/lib/contracts/run-columns";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { jsonDigest } from "@/lib/digest";
import type { Run } from "@/lib/generated/prisma/client";
import { AppError, invalidArguments } from "@/lib/errors";
import { transitionRun } from "@/lib/runs/states";
import { storableString } from "@/lib/untrusted/storable-schema";
import { decisionBlocker, decisionRefusal, type DecisionSubject } from "./decision-rules";
import { submitterOf } from "./service";

const seenSchema = z.object({ resultDigest: z.string().regex(/^[0-9a-f]{64}$/, "resultDigest must be a sha256 hex digest") }).strict();

export const releaseSchema = z
  .object({
    runId: z.uuid("runId must be a run id"),
    comment: storableString().trim().min(1, "A reason is required: why the agent may use this result.").max(5_000),
    seen: seenSchema,
  })
  .strict();

export const withholdSchema = z
  .object({
    runId: z.uuid("runId must be a run id"),
    comment: storableString().trim().min(1, "A reason is required: the agent is told why its result is withheld.").max(5_000),
    seen: seenSchema,
  })
  .strict();

export type ReleaseResult = { runId: string; released: boolean; releases: { received: number; required: number; by: string[] } };
export type WithholdResult = { runId: string; status: "withheld" };

/** What a release is bound to: the digest of the result as stored. */
export function resultDigestOf(result: unknown): string {
  return jsonDigest(result ?? null);
}

type ReleaseSubject = Omit<DecisionSubject, "reviews" | "reviewExpiresAt"> &
  Pick<Run, "releasedAt" | "approvalsRequired" | "releaseDecision" | "releaseExpiresAt"> & { releases: readonly { reviewerId: string }[] };

/**
 * The release a run waits for: its quorum, the role policy named, the deadline, and whether a
 * release policy forbids it; null when none. A failed check's release needs its review's quorum,
 * or more when a release policy holds the result too, and is impossible when one withholds it.
 */
export function pendingRelease(
  run: ReleaseSubject,
): { quorum: number; role: string | null; deadline: Date | null; held: boolean; forbiddenBecause: string | null } | null {
  const decision = runColumn(run, "releaseDecision");
  if (run.status === "check_failed" && !run.releasedAt) {
    const holds = decision?.decision === "escalate" ? decision : null;
    return {
      quorum: Math.max(1, run.approvalsRequired, holds?.approvalsRequired ?? 0),
      role: holds?.reviewerRole ?? run.reviewerRole,
      deadline: null,
      held: false,
      forbiddenBecause: decision?.decision === "deny" ? decision.reasons.map((r) => r.text).join(" ") : null,
    };
  }
  if (run.status !== "pending_release") return null;
  return {
    quorum: Math.max(1, decision?.approvalsRequired ?? 1),
    role: decision?.reviewerRole ?? null,
    deadline: run.releaseExpiresAt,
    held: true,
    forbiddenBecause: null,
  };
}

/** The decision rules, read for a release: the run's own release votes stand in for review votes. */
export function releaseBlocker(run: ReleaseSubject, actor: Actor, now: Date = new Date()) {
  const pending = pendingRelease(run);
  const subject: DecisionSubject = {
    ...run,
    // Release votes are checked as review votes are; "pending" means waiting for release.
    status: pending && pending.forbiddenBecause === null ? "pending_review" : run.status,
    reviewerRole: pending ? pending.role : run.reviewerRole,
    reviewExpiresAt: pending?.deadline ?? null,
    reviews: run.releases.map((r) => ({ reviewerId: r.reviewerId, verdict: "release" })),
  };
  const blocker = decisionBlocker(subject, actor, now);
  if (blocker?.code === "not_pending") {
    const why = run.releasedAt
      ? "its result was already released"
      : pending?.forbiddenBecause
        ? `a release policy withholds it (${pending.forbiddenBecause})`
        : run.status === "expired" && run.releaseExpiresAt
          ? "the hold on it expired before anyone released it (the script did run: what it wrote was written)"
          : `it is ${run.status.replaceAll("_", " ")}, not waiting for a release`;
    return { ...blocker, message: `Run ${run.id} has no result waiting for release: ${why}.` };
  }
  if (blocker?.code === "expired") return { ...blocker, message: `The hold on run ${run.id}'s result expired; it can no longer be released.` };
  return blocker;
}

/** Locks the run, loads what the rules read, and refuses what they refuse or a result other than the one seen. */
async function lockedSubject(tx: Tx, actor: Extract<Actor, { type: "user" }>, runId: string, seen: { resultDigest: string }) {
  await tx.$queryRaw`SELECT id FROM "Run" WHERE id = ${runId}::uuid FOR UPDATE`;
  const run = await tx.run.findUnique({
    where: { id: runId },
    include: { agent: { select: { ownerId: true, name: true } }, releases: { select: { reviewerId: true } } },
  });
  if (!run) throw new AppError("not_found", `No run ${runId}.`);
  // Who submitted it for the agent may not release its result, as they may not review it.
  const blocker = releaseBlocker({ ...run, submittedBy: await submitterOf(tx, runId) }, actor);
  if (blocker) throw decisionRefusal(blocker, run);
  if (resultDigestOf(run.result) !== seen.resultDigest) {
    throw new AppError("conflict", "The result is not the one you saw; reload the page and look at it again.", { details: { changed: ["resultDigest"] } });
  }
  const reviewer = await tx.user.findUniqueOrThrow({ where: { id: actor.id }, select: { name: true, email: true } });
  return { run, pending: pendingRelease(run)!, reviewer };
}

function personWithReviewScope(actor: Actor): asserts actor is Extract<Actor, { type: "user" }> {
  requireScope(actor, "runs:review");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can release or withhold a result.");
}

export async function releaseResult(db: Db, actor: Actor, raw: unknown): Promise<ReleaseResult> {
  personWithReviewScope(actor);
  const parsed = releaseSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { runId, comment, seen } = parsed.data;
  return db.$transaction(
    async (tx) => {
      const { pending, reviewer } = await lockedSubject(tx, actor, runId, seen);
      await tx.resultRelease.create({ data: { runId, reviewerId: actor.id, comment, resultDigest: seen.resultDigest } });
      const releasers = await tx.resultRelease.findMany({ where: { runId }, orderBy: { createdAt: "asc" }, select: { reviewer: { select: { email: true } } } });
      const releases = { received: releasers.length, required: pending.quorum, by: releasers.map((r) => r.reviewer.email) };
      const subject = { type: "run", id: runId };
      await recordAudit(tx, {
        actor,
        action: "run.release_approved",
        subject,
        data: { comment, reviewer, resultDigest: seen.resultDigest, releases: releases.received, releasesRequired: releases.required },
      });
      const released = releases.received >= releases.required;
      if (released) {
        const releasedAt = new Date();
        if (pending.held) {
          await transitionRun(tx, actor, { runId, from: "pending_release", to: "succeeded", data: { releasedAt }, audit: { releasedBy: releases.by } });
        } else {
          await tx.run.update({ where: { id: runId }, data: { releasedAt } });
        }
        await recordAudit(tx, { actor, action: "run.result_released", subject, data: { released: true, by: releases.by, resultDigest: seen.resultDigest } });
      }
      return { runId, released, releases };
    },
    { timeout: 15_000, maxWait: 10_000 },
  );
}

/** A reviewer withholds a held result for good: the run ends `withheld`, and the agent is told why. */
export async function withholdResult(db: Db, actor: Actor, raw: unknown): Promise<WithholdResult> {
  personWithReviewScope(actor);
  const parsed = withholdSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { runId, comment, seen } = parsed.data;
  return db.$transaction(
    async (tx) => {
      const { pending, reviewer } = await lockedSubject(tx, actor, runId, seen);
      if (!pending.held) {
        throw new AppError("conflict", `Run ${runId}'s result is already withheld because a check failed; leave it unreleased to keep it from the agent.`, {
          details: { status: "check_failed" },
        });
      }
      await transitionRun(tx, actor, {
        runId,
        from: "pending_release",
        to: "withheld",
        data: { error: { code: "RESULT_WITHHELD", message: `A reviewer withheld the result: ${comment}`, untrusted: false } },
        audit: { comment, reviewer, resultDigest: seen.resultDigest },
      });
      return { runId, status: "withheld" as const };
    },
    { timeout: 15_000, maxWait: 10_000 },
  );
}
