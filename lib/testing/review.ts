/**
 * For tests that need an escalated run to run: every reviewer approves it, through decideRun with
 * the binding the run page would send, each time it waits for review (after its plan preview),
 * until it ends or its result is held; then the agent's view of it. Throws when it does not end in ten seconds of waiting.
 */
import type { Actor } from "@/lib/contracts/scopes";
import { decideRun, reviewBinding } from "@/lib/review/service";
import { getRun, type RunView } from "@/lib/runs/service";
import type { LedgerRuntime } from "./ledger-runtime";

/** Statuses it waits through; any other (an end, or a result held for release) is returned. */
const UNTIL_ENDED: readonly string[] = ["submitted", "analyzed", "previewing", "auto_approved", "approved", "queued", "running"];

export async function reviewedToEnd(ledger: LedgerRuntime, reviewers: readonly Extract<Actor, { type: "user" }>[], runId: string): Promise<RunView> {
  for (let i = 0; i < 100; i++) {
    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    if (run.status === "pending_review") {
      const seen = reviewBinding(run);
      for (const reviewer of reviewers) {
        await decideRun({ db: ledger.db.prisma, startExecution: (id) => ledger.runtime.startExecution(id) }, reviewer, { runId, verdict: "approve", seen });
      }
      continue;
    }
    if (!UNTIL_ENDED.includes(run.status)) return getRun(ledger.runtime, ledger.agent, { runId });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`run ${runId} did not finish`);
}
