/**
 * record_outcome: what an agent did with a run's result — answered the user, passed it to another
 * tool, discarded it, or something else — so the record does not stop at the result. The one
 * service function behind the MCP tool.
 *
 * Guarantees:
 * - only the run's own agent, with `runs:submit`; another agent's run (or no run) gets the same
 *   not_found answer get_run gives, so a run id reveals nothing;
 * - only once the run has ended (any terminal status: the agent has its result or its refusal);
 *   before that it is a conflict saying so;
 * - arguments are a closed schema: `action` one of OUTCOME_ACTIONS, `detail` at most 2,000
 *   characters, refused (never repaired) when it holds U+0000 or a lone surrogate;
 * - several outcomes per run (an agent may answer and then pass the result on), at most
 *   MAX_OUTCOMES_PER_RUN, counted under a per-run lock;
 * - each is a "RunOutcome" row (append-only by trigger) and a `run.outcome_recorded` event
 *   {action, detail, outcomeId} by the agent on the run, in one transaction.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import { requireScope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError, invalidArguments } from "@/lib/errors";
import { findUnstorable, unstorableRefusal } from "@/lib/untrusted/storable-text";
import type { AgentActor } from "./service";

export const OUTCOME_ACTIONS = ["answered_user", "passed_to_tool", "discarded", "other"] as const;
export type OutcomeAction = (typeof OUTCOME_ACTIONS)[number];

export const MAX_OUTCOMES_PER_RUN = 20;
export const MAX_OUTCOME_DETAIL = 2_000;

export const recordOutcomeSchema = z
  .object({
    runId: z.uuid("runId must be a run id from submit_run"),
    action: z.enum(OUTCOME_ACTIONS),
    detail: z.string().max(MAX_OUTCOME_DETAIL).optional(),
  })
  .strict();

export type RecordedOutcome = { outcomeId: string; runId: string; action: OutcomeAction; at: string };

export async function recordOutcome(db: Db, agent: AgentActor, raw: unknown): Promise<RecordedOutcome> {
  requireScope(agent, "runs:submit");
  const parsed = recordOutcomeSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { runId, action, detail } = parsed.data;
  const bad = findUnstorable(detail, "detail");
  if (bad) throw unstorableRefusal(bad);
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`outcome:${runId}`}))`;
    const run = await tx.run.findFirst({ where: { id: runId, agentId: agent.id }, select: { status: true } });
    if (!run) throw new AppError("not_found", `No run ${runId} for this agent.`);
    if (!(TERMINAL_STATUSES as readonly string[]).includes(run.status)) {
      throw new AppError("conflict", `Run ${runId} has not finished (status: ${run.status}); record what you did with it once get_run shows it ended.`, {
        next: "Wait for the run to end (get_run with waitSeconds), use its result, then record the outcome.",
      });
    }
    const recorded = await tx.runOutcome.count({ where: { runId } });
    if (recorded >= MAX_OUTCOMES_PER_RUN) {
      throw new AppError("conflict", `Run ${runId} already has ${recorded} recorded outcomes; the limit is ${MAX_OUTCOMES_PER_RUN}.`, {
        next: "Record nothing more for this run; its outcomes are on record.",
      });
    }
    const row = await tx.runOutcome.create({ data: { runId, agentId: agent.id, action, detail: detail ?? null } });
    await recordAudit(tx, {
      actor: agent,
      action: "run.outcome_recorded",
      subject: { type: "run", id: runId },
      data: { action, detail: detail ?? null, outcomeId: row.id },
    });
    return { outcomeId: row.id, runId, action, at: row.at.toISOString() };
  });
}
