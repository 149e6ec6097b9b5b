/**
 * What an agent reads through the MCP door, recorded before the answer is sent (each staged by a
 * statement of its own, which commits whole or not at all; if the event cannot be written the
 * call fails and the agent gets an internal error, not the data):
 * - `tools.searched {query, server, detail, results}` for every search_tools;
 * - `inputs.listed {count}` for every list_inputs;
 * - `run.result_read {via, dataClasses, status}` whenever a run's result is handed to the agent
 *   (get_run, submit_run when it answers with the result, tasks/result, and `airlock exec --agent`) and the run touches
 *   regulated data — its inputs' classes or its tools' (facts.dataClasses), see
 *   REGULATED_DATA_CLASSES in lib/contracts/data-classes.ts.
 * Refusals (auth.forbidden) go through lib/audit/access.ts; rejected tokens through
 * lib/auth/token-rejections.ts.
 */
import { stageAuditEvents, type AuditEventInput } from "@/lib/audit/record";
import type { Db } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import { touchesRegulatedData } from "@/lib/contracts/data-classes";
import { runOfView, type AgentActor, type RunView } from "@/lib/runs/service";

export async function recordAgentRead(db: Db, agent: AgentActor, event: Omit<AuditEventInput, "actor">): Promise<void> {
  // The event is the whole change: one statement needs no transaction around it (and saves two round trips).
  await stageAuditEvents(db, [{ actor: agent, ...event }], new Date());
}

/** The data classes a run touches: its inputs' and, from analysis, its tools' (facts.dataClasses). */
export function runDataClasses(run: { inputs: Prisma.JsonValue; facts: Prisma.JsonValue }): string[] {
  const classes = new Set<string>();
  if (Array.isArray(run.inputs)) {
    for (const input of run.inputs) {
      if (input && typeof input === "object" && !Array.isArray(input) && typeof input.dataClass === "string") classes.add(input.dataClass);
    }
  }
  const facts = run.facts;
  if (facts && typeof facts === "object" && !Array.isArray(facts) && Array.isArray(facts.dataClasses)) {
    for (const c of facts.dataClasses) if (typeof c === "string") classes.add(c);
  }
  return [...classes].sort();
}

/** Where a result was handed over: an MCP tool or task, or `airlock exec --agent` (lib/cli/exec.ts). */
export type ResultDoor = "get_run" | "submit_run" | "call_tool" | "run_skill" | "tasks/result" | "cli:exec";

/**
 * Before the agent is handed a run's view: records `run.result_read` when the view carries a
 * result or logs (unfinished runs have neither) and the run touches regulated data, as it stood
 * when the view was built (lib/runs/service.ts presentRun). Throws when the event cannot be
 * written, or when the view was not built from a stored run (so nothing unrecorded is handed over).
 */
export async function recordResultRead(db: Db, agent: AgentActor, view: RunView, via: ResultDoor): Promise<void> {
  if (view.result === undefined && view.logs === undefined) return;
  const run = runOfView(view);
  if (!run) throw new Error(`run ${view.runId}: its view was not built from the stored run, so handing it over cannot be recorded`);
  const dataClasses = runDataClasses(run);
  if (!touchesRegulatedData(dataClasses)) return;
  await recordAgentRead(db, agent, {
    action: "run.result_read",
    subject: { type: "run", id: view.runId },
    data: { via, dataClasses, status: run.status },
  });
}
