/**
 * Who may decide a run, as one pure rule shared by the service and the read models.
 *
 * `decisionBlocker(run, actor, now)` returns null when the actor may vote on the run now, or the
 * first reason they may not, typed and in words. The order is fixed: the actor (holds
 * runs:review, is a person), separation of duties (not the owner of the run's agent, nor the person
 * who submitted it for the agent through another door), the policy's
 * reviewer role, the run still waiting for review and not past its deadline, one vote per person.
 *
 * decideRun (./service.ts) throws `decisionRefusal(blocker, run)` inside its locked transaction,
 * so the words and `details` an API caller gets are the ones the run page shows; the page and the
 * queue only decide what to *offer* with it. The binding of an approval to what the reviewer saw is
 * not here: it needs the submitted facts (./service.ts bindingChanges).
 *
 * Pure: no database, no I/O; the clock only through `now` (default: the current time).
 */
import { hasScope, type Actor } from "@/lib/contracts/scopes";
import { AppError } from "@/lib/errors";

export const DECISION_BLOCKER_CODES = ["not_reviewer", "own_agent", "own_submission", "reviewer_role", "not_pending", "expired", "already_voted"] as const;
export type DecisionBlockerCode = (typeof DECISION_BLOCKER_CODES)[number];
export type DecisionBlocker = { code: DecisionBlockerCode; message: string };

/** What the rule reads of a run. `reviews` may hold only the actor's own vote; others are ignored. */
export type DecisionSubject = {
  id: string;
  status: string;
  reviewerRole: string | null;
  reviewExpiresAt: Date | null;
  agent: { ownerId: string; name: string };
  /** The person who submitted it for the agent through another door (`exec --as`), from its run.submitted event; absent when unknown. */
  submittedBy?: string | null;
  reviews: readonly { reviewerId: string; verdict: string }[];
};

const words = (value: string) => value.replaceAll("_", " ");

export function decisionBlocker(run: DecisionSubject, actor: Actor, now: Date = new Date()): DecisionBlocker | null {
  if (!hasScope(actor, "runs:review")) {
    return { code: "not_reviewer", message: "This needs the runs:review permission, which your role does not have." };
  }
  if (actor.type !== "user") return { code: "not_reviewer", message: "Only a person can review a run." };
  if (run.agent.ownerId === actor.id) {
    return { code: "own_agent", message: `You own the agent ${run.agent.name}, so you cannot decide its runs; another reviewer must.` };
  }
  if (run.submittedBy === actor.id) {
    return { code: "own_submission", message: `You submitted this run for the agent ${run.agent.name}, so you cannot decide it; another reviewer must.` };
  }
  if (run.reviewerRole && run.reviewerRole !== actor.role) {
    return { code: "reviewer_role", message: `Policy asks a ${run.reviewerRole} to review this run; your role is ${actor.role}.` };
  }
  if (run.status !== "pending_review") {
    return { code: "not_pending", message: `Run ${run.id} is already ${words(run.status)}; it is no longer waiting for review.` };
  }
  if (run.reviewExpiresAt && run.reviewExpiresAt.getTime() <= now.getTime()) {
    return {
      code: "expired",
      message: `The review of run ${run.id} expired at ${run.reviewExpiresAt.toISOString()}; the agent must submit it again.`,
    };
  }
  const mine = run.reviews.find((review) => review.reviewerId === actor.id);
  if (mine) {
    return { code: "already_voted", message: `You already voted on this run (${words(mine.verdict)}); quorum needs a different person.` };
  }
  return null;
}

/**
 * The AppError decideRun throws for a blocker: forbidden when the person may not decide this run
 * at all, conflict when the run's state (decided, expired, already voted) stands in the way.
 */
export function decisionRefusal(blocker: DecisionBlocker, run: Pick<DecisionSubject, "status">): AppError {
  switch (blocker.code) {
    case "not_reviewer":
      return new AppError("forbidden", blocker.message, { details: { scope: "runs:review" } });
    case "own_agent":
    case "own_submission":
    case "reviewer_role":
      return new AppError("forbidden", blocker.message, { details: { reason: blocker.code } });
    case "not_pending":
      return new AppError("conflict", blocker.message, { details: { status: run.status } });
    case "expired":
      return new AppError("conflict", blocker.message, { details: { status: "expired" } });
    case "already_voted":
      return new AppError("conflict", blocker.message, { details: { reason: "already_voted" } });
  }
}
