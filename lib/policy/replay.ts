/**
 * Replays a draft policy set against past proposals: each stored Cedar request (kept with its run
 * at decision time) is decided again by the draft and compared with what was decided then. Read
 * only; the draft is validated first and a bad draft is refused with line and column.
 */
import type { Db } from "@/lib/db";
import { decide } from "./decide";
import { preparePolicySet } from "./policy-set";
import { runColumn } from "@/lib/contracts/run-columns";
import { upgradePolicyRequest, type PolicyRequest } from "./request";

export type ReplayRow = {
  runId: string;
  createdAt: string;
  agent: string;
  purpose: string;
  before: { decision: string | null; approvalsRequired: number };
  after: { decision: string; approvalsRequired: number; policies: string[] };
  changed: boolean;
};

export async function replayDraft(db: Db, draftText: string, last: number): Promise<{ rows: ReplayRow[]; changed: number }> {
  const prepared = preparePolicySet(draftText);
  const runs = await db.run.findMany({
    where: { decision: { not: null } },
    orderBy: { createdAt: "desc" },
    take: last,
    include: { agent: { select: { name: true } } },
  });
  const rows = runs
    .flatMap((run) => {
      const stored = runColumn(run, "policyRequest");
      return stored ? [{ run, request: stored as PolicyRequest }] : [];
    })
    .map(({ run, request }) => {
      const after = decide(upgradePolicyRequest(request), prepared);
      const changed = after.decision !== run.decision || after.approvalsRequired !== run.approvalsRequired;
      return {
        runId: run.id,
        createdAt: run.createdAt.toISOString(),
        agent: run.agent.name,
        purpose: run.purpose,
        before: { decision: run.decision, approvalsRequired: run.approvalsRequired },
        after: { decision: after.decision, approvalsRequired: after.approvalsRequired, policies: after.reasons.map((r) => r.policyId) },
        changed,
      };
    });
  return { rows, changed: rows.filter((row) => row.changed).length };
}
