/**
 * Read models of the review queue (`queueView`, `waitingForYouCount`); the runs list is
 * ./runs-presenter.ts.
 *
 * Returns plain, serializable DTOs, never Prisma objects: every string that came from an agent
 * (agent names, purposes) passes through lib/untrusted/inert.ts; hidden characters are kept, for
 * components to render through components/ui/inert.tsx as marker elements. Whether the viewer may
 * decide a queued run is ./decision-rules.ts decisionBlocker, the rule decideRun enforces (for a
 * held result, ./release.ts releaseBlocker, the rule releaseResult enforces); the queue only
 * *offers* with it. The queue holds the waits for people lib/runs/review-queue.ts names: runs
 * pending review, results release policy holds (pending_release), and results of failed checks a
 * reviewer may release, for a while; a failed check's result that no one may release is left out.
 */
import "server-only";
import type { UserActor } from "@/lib/auth/session";
import { runColumn } from "@/lib/contracts/run-columns";
import { hasScope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { decisionBlocker, type DecisionBlockerCode } from "./decision-rules";
import { inReviewQueue } from "@/lib/runs/review-queue";
import { pendingRelease, releaseBlocker } from "./release";
import { inertText } from "@/lib/untrusted/inert";
import { isEffect, riskOf, runFacts, type Effect, type Risk } from "./risk";

export type QueueFilters = { agent?: string; effect?: Effect };

/** The queue page's filters from its URL: what is not a valid filter is left out (the JSON route refuses it instead). */
export function parseQueueFilters(params: Record<string, string | string[] | undefined>): QueueFilters {
  const get = (key: string) => {
    const value = params[key];
    return typeof value === "string" && value.length > 0 && value.length <= 200 ? value : undefined;
  };
  const effect = get("effect");
  return { agent: get("agent"), effect: isEffect(effect) ? effect : undefined };
}

export type QueueItem = {
  id: string;
  /** What people are asked: to review the run, or to release its withheld result. */
  waitingFor: "review" | "release";
  /** pending_review, pending_release (a release policy holds the result) or check_failed (a declared check failed). */
  status: string;
  agent: string;
  purpose: string;
  createdAt: string;
  reviewExpiresAt: string | null;
  effect: Effect;
  openWorld: boolean;
  dataClasses: string[];
  findings: { critical: number; warning: number };
  risk: Risk;
  /** Approvals (or releases, for a held result) needed, and who gave them. */
  approvalsRequired: number;
  approvals: string[];
  /** Why this viewer cannot decide it (decisionBlocker's code; null: they can). */
  blockedBecause: DecisionBlockerCode | null;
};

export type QueueView = {
  items: QueueItem[];
  total: number;
  waitingForYou: number;
  agents: string[];
  filters: QueueFilters;
  generatedAt: string;
};

export async function queueView(db: Db, viewer: UserActor, filters: QueueFilters = {}): Promise<QueueView> {
  const now = new Date();
  const rows = await db.run.findMany({
    where: inReviewQueue(now),
    orderBy: { createdAt: "asc" },
    take: 500,
    select: {
      id: true,
      status: true,
      purpose: true,
      createdAt: true,
      reviewExpiresAt: true,
      facts: true,
      findings: true,
      decision: true,
      approvalsRequired: true,
      reviewerRole: true,
      releasedAt: true,
      releaseDecision: true,
      releaseExpiresAt: true,
      agent: { select: { name: true, ownerId: true } },
      reviews: { select: { reviewerId: true, verdict: true, reviewer: { select: { email: true } } } },
      releases: { select: { reviewerId: true, reviewer: { select: { email: true } } } },
    },
  });
  const all = rows.map((run): QueueItem => {
    const facts = runFacts(runColumn(run, "facts"));
    const findings = runColumn(run, "findings") ?? [];
    const held = run.status === "pending_review" ? null : pendingRelease(run);
    const waiting = held
      ? {
          waitingFor: "release" as const,
          reviewExpiresAt: run.releaseExpiresAt?.toISOString() ?? null,
          approvalsRequired: held.quorum,
          approvals: run.releases.map((r) => r.reviewer.email),
          blockedBecause: releaseBlocker(run, viewer, now)?.code ?? null,
        }
      : {
          waitingFor: "review" as const,
          reviewExpiresAt: run.reviewExpiresAt?.toISOString() ?? null,
          approvalsRequired: Math.max(1, run.approvalsRequired),
          approvals: run.reviews.filter((r) => r.verdict === "approve").map((r) => r.reviewer.email),
          blockedBecause: decisionBlocker(run, viewer, now)?.code ?? null,
        };
    return {
      id: run.id,
      status: run.status,
      agent: inertText(run.agent.name, 200),
      purpose: inertText(run.purpose, 500),
      createdAt: run.createdAt.toISOString(),
      effect: facts.effect,
      openWorld: facts.openWorld,
      dataClasses: facts.dataClasses,
      findings: {
        critical: findings.filter((f) => f.severity === "critical" || f.severity === "error").length,
        warning: findings.filter((f) => f.severity === "warning").length,
      },
      risk: riskOf(run, facts, findings),
      ...waiting,
    };
  });
  const items = all
    .filter((item) => (!filters.agent || item.agent === filters.agent) && (!filters.effect || item.effect === filters.effect))
    .sort((a, b) => b.risk.score - a.risk.score || a.createdAt.localeCompare(b.createdAt));
  return {
    items,
    total: all.length,
    waitingForYou: all.filter((item) => item.blockedBecause === null).length,
    agents: [...new Set(all.map((item) => item.agent))].sort(),
    filters,
    generatedAt: now.toISOString(),
  };
}

/**
 * Runs this viewer could decide now: decisionBlocker's rules as one count query (pending, not past
 * the deadline, not of an agent they own, their reviewer role, not voted on yet).
 */
export async function waitingForYouCount(db: Db, viewer: UserActor): Promise<number> {
  if (!hasScope(viewer, "runs:review")) return 0;
  const reviews = await db.run.count({
    where: {
      status: "pending_review",
      agent: { ownerId: { not: viewer.id } },
      reviews: { none: { reviewerId: viewer.id } },
      AND: [{ OR: [{ reviewerRole: null }, { reviewerRole: viewer.role }] }, { OR: [{ reviewExpiresAt: null }, { reviewExpiresAt: { gt: new Date() } }] }],
    },
  });
  // Results to release, as many as the queue lists; their role and quorum live in the release decision, read by releaseBlocker itself.
  const held = await db.run.findMany({
    where: {
      AND: [inReviewQueue(), { status: { not: "pending_review" } }],
      agent: { ownerId: { not: viewer.id } },
      releases: { none: { reviewerId: viewer.id } },
    },
    orderBy: { createdAt: "asc" },
    select: {
      id: true,
      status: true,
      reviewerRole: true,
      releasedAt: true,
      approvalsRequired: true,
      releaseDecision: true,
      releaseExpiresAt: true,
      agent: { select: { name: true, ownerId: true } },
      releases: { select: { reviewerId: true } },
    },
    take: 500,
  });
  return reviews + held.filter((run) => releaseBlocker(run, viewer) === null).length;
}
