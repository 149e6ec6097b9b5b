/**
 * Releasing a withheld result: a run that ended `check_failed` keeps its result for the audit log
 * and withholds it from the agent (lib/runs/service.ts presentRun) until reviewers release it.
 *
 * releaseResult guarantees:
 * - only a person holding `runs:review`, in the run's reviewer role if policy named one, and not
 *   the owner of the run's agent, releases; one release per person (a ResultRelease row, unique
 *   per run and reviewer, append-only); the same rules and words as decideRun
 *   (./decision-rules.ts), with "waiting for release" in place of "waiting for review";
 * - a reason is required: the person says why the result can be used although a check failed;
 * - bound to what they saw: the digest of the stored result (`seen.resultDigest`) is compared with
 *   the row on the server; a difference is refused (conflict);
 * - quorum: the result is released when distinct releases reach the run's approval quorum (at
 *   least one); then `releasedAt` is set, once, with a `run.result_released` event, in the same
 *   transaction that locked the run (the database refuses a releasedAt without that event);
 * - the run's status does not change: it stays check_failed, and its checks stay on record.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { jsonDigest } from "@/lib/digest";
import { AppError, invalidArguments } from "@/lib/errors";
import { storableString } from "@/lib/untrusted/storable-schema";
import { decisionBlocker, decisionRefusal, type DecisionSubject } from "./decision-rules";

export const releaseSchema = z
  .object({
    runId: z.uuid("runId must be a run id"),
    comment: storableString().trim().min(1, "A reason is required: why the result can be used although a check failed.").max(5_000),
    seen: z.object({ resultDigest: z.string().regex(/^[0-9a-f]{64}$/, "resultDigest must be a sha256 hex digest") }).strict(),
  })
  .strict();

export type ReleaseResult = { runId: string; released: boolean; releases: { received: number; required: number; by: string[] } };

/** What a release is bound to: the digest of the result as stored. */
export function resultDigestOf(result: unknown): string {
  return jsonDigest(result ?? null);
}

/** The decision rules, read for a release: the run's own release votes stand in for review votes. */
export function releaseBlocker(
  run: Omit<DecisionSubject, "reviews" | "reviewExpiresAt"> & {
    releasedAt: Date | null;
    approvalsRequired: number;
    releases: readonly { reviewerId: string }[];
  },
  actor: Actor,
) {
  const subject: DecisionSubject = {
    ...run,
    // Release votes are checked as review votes are; "pending" means waiting for release.
    status: run.status === "check_failed" && !run.releasedAt ? "pending_review" : run.status,
    reviewExpiresAt: null,
    reviews: run.releases.map((r) => ({ reviewerId: r.reviewerId, verdict: "release" })),
  };
  const blocker = decisionBlocker(subject, actor);
  if (blocker?.code === "not_pending") {
    const why = run.releasedAt ? "its result was already released" : `it is ${run.status.replaceAll("_", " ")}, not withheld by a failed check`;
    return { ...blocker, message: `Run ${run.id} has no result waiting for release: ${why}.` };
  }
  return blocker;
}

export async function releaseResult(db: Db, actor: Actor, raw: unknown): Promise<ReleaseResult> {
  requireScope(actor, "runs:review");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can release a result.");
  const parsed = releaseSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { runId, comment, seen } = parsed.data;
  return db.$transaction(
    async (tx) => {
      await tx.$queryRaw`SELECT id FROM "Run" WHERE id = ${runId}::uuid FOR UPDATE`;
      const run = await tx.run.findUnique({
        where: { id: runId },
        include: { agent: { select: { ownerId: true, name: true } }, releases: { select: { reviewerId: true } } },
      });
      if (!run) throw new AppError("not_found", `No run ${runId}.`);
      const blocker = releaseBlocker(run, actor);
      if (blocker) throw decisionRefusal(blocker, run);
      if (resultDigestOf(run.result) !== seen.resultDigest) {
        throw new AppError("conflict", "The result is not the one you saw; reload the page and look at it again.", { details: { changed: ["resultDigest"] } });
      }
      await tx.resultRelease.create({ data: { runId, reviewerId: actor.id, comment, resultDigest: seen.resultDigest } });
      const releasers = await tx.resultRelease.findMany({ where: { runId }, orderBy: { createdAt: "asc" }, select: { reviewer: { select: { email: true } } } });
      const releases = { received: releasers.length, required: Math.max(1, run.approvalsRequired), by: releasers.map((r) => r.reviewer.email) };
      const reviewer = await tx.user.findUniqueOrThrow({ where: { id: actor.id }, select: { name: true, email: true } });
      const subject = { type: "run", id: runId };
      await recordAudit(tx, {
        actor,
        action: "run.release_approved",
        subject,
        data: { comment, reviewer, resultDigest: seen.resultDigest, releases: releases.received, releasesRequired: releases.required },
      });
      const released = releases.received >= releases.required;
      if (released) {
        await tx.run.update({ where: { id: runId }, data: { releasedAt: new Date() } });
        await recordAudit(tx, { actor, action: "run.result_released", subject, data: { released: true, by: releases.by, resultDigest: seen.resultDigest } });
      }
      return { runId, released, releases };
    },
    { timeout: 15_000, maxWait: 10_000 },
  );
}
