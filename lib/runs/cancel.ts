/**
 * Stopping runs: an agent's or a reviewer's cancel, and the runs of a revoked agent.
 *
 * Guarantees:
 * - a run that has not started is cancelled at once (a conditional transition, audited); it can
 *   then never be approved or executed;
 * - a running run gets `cancelRequestedAt`: the executor holding it aborts the sandbox and writes
 *   `cancelled`; if that executor is gone, the maintenance sweep ends the run `cancelled` and never
 *   retries it (./recovery.ts). Either way the cancel is for good;
 * - revoking an agent and stopping its runs happen in one transaction;
 * - a cancel is idempotent: asking again for a run already cancelled answers `cancelled`; a run
 *   that ended otherwise is a conflict;
 * - an agent's cancel (cancel_run, MCP tasks/cancel) answers once a running run has stopped, up to
 *   CANCEL_WAIT_MS (its executor notices within a heartbeat): `running` in the answer means it is
 *   still stopping, never that the cancel was refused.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { revokeAgent } from "@/lib/auth/agents";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { Run } from "@/lib/generated/prisma/client";
import { CANCELLABLE_BEFORE_START } from "@/lib/contracts/run-states";
import { POLL_MS, type RunChanges } from "./run-changes";
import { transitionRun } from "./states";

function cancelBeforeStart(tx: Tx, actor: Actor, runId: string, message: string, audit: Record<string, unknown>): Promise<boolean> {
  const now = new Date();
  return transitionRun(tx, actor, {
    runId,
    from: CANCELLABLE_BEFORE_START,
    to: "cancelled",
    data: { finishedAt: now, cancelRequestedAt: now, error: { code: "CANCELLED", message, untrusted: false } },
    audit,
  });
}

export async function cancelRun(deps: { db: Db }, actor: Actor, runId: string): Promise<{ runId: string; status: Run["status"] }> {
  requireScope(actor, actor.type === "agent" ? "runs:submit" : "runs:review");
  if (!z.uuid().safeParse(runId).success) throw new AppError("bad_request", "runId must be a run id from submit_run");
  const ownerFilter = actor.type === "agent" ? { agentId: actor.id } : {};
  return deps.db.$transaction(async (tx) => {
    const run = await tx.run.findFirst({ where: { id: runId, ...ownerFilter }, select: { status: true } });
    if (!run) throw new AppError("not_found", `No run ${runId} for this agent.`);
    if (await cancelBeforeStart(tx, actor, runId, "Cancelled before it ran.", { phase: "before_start" })) return { runId, status: "cancelled" as const };
    const running = await tx.run.updateMany({ where: { id: runId, status: "running", cancelRequestedAt: null }, data: { cancelRequestedAt: new Date() } });
    if (running.count === 1) {
      await recordAudit(tx, { actor, action: "run.cancel_requested", subject: { type: "run", id: runId } });
      return { runId, status: "running" as const };
    }
    const now = await tx.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } });
    // Asked again (a client retrying after a lost answer): the same answer, not an error.
    if (now.status === "running" || now.status === "cancelled") return { runId, status: now.status };
    throw new AppError("conflict", `Run ${runId} is already ${now.status.replaceAll("_", " ")}; it cannot be cancelled.`, {
      next: "The run has ended: there is nothing to cancel. get_run shows how it ended.",
    });
  });
}

/** How long an agent's cancel of a running run waits for its executor to stop it (it heartbeats every second). */
export const CANCEL_WAIT_MS = 5_000;

/**
 * cancelRun, then, for a run that was running, a wait until it has stopped or CANCEL_WAIT_MS pass:
 * the answer is its status then (`cancelled`, or how it ended if it ended first). Woken by the run's
 * pushed changes when `changes` is given, else read every POLL_MS.
 */
export async function cancelRunAndWait(
  deps: { db: Db; changes?: RunChanges },
  actor: Actor,
  runId: string,
  signal?: AbortSignal,
): Promise<{ runId: string; status: Run["status"] }> {
  const asked = await cancelRun(deps, actor, runId);
  if (asked.status !== "running") return asked;
  const deadline = Date.now() + CANCEL_WAIT_MS;
  for (;;) {
    // Armed before the read, so a change committed after the read ends the wait.
    const armed = deps.changes?.arm(runId);
    const { status } = await deps.db.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } });
    const left = deadline - Date.now();
    if (status !== "running" || left <= 0 || signal?.aborted) {
      armed?.cancel();
      return { runId, status };
    }
    if (armed) await armed.wait(left, signal);
    else await sleep(Math.min(left, POLL_MS), undefined, { signal }).catch(() => undefined);
  }
}

/**
 * Revokes an agent and its tokens, cancels its runs that have not started and asks its running ones
 * to stop. The runs' rows are locked first, in id order, before anything else is written, so two
 * transactions that change the same runs take their rows in one order and cannot deadlock.
 */
export async function revokeAgentAndStopRuns(tx: Tx, actor: Actor, name: string): Promise<{ revokedTokens: number; cancelledRuns: number }> {
  requireScope(actor, "agents:manage");
  await tx.$queryRaw`
    SELECT r.id FROM "Run" r JOIN "Agent" a ON a.id = r."agentId"
    WHERE a.name = ${name} AND r.status::text = ANY(${[...CANCELLABLE_BEFORE_START, "running"]}::text[]) ORDER BY r.id FOR UPDATE OF r`;
  const { agentId, revokedTokens } = await revokeAgent(tx, actor, name);
  const waiting = await tx.run.findMany({ where: { agentId, status: { in: [...CANCELLABLE_BEFORE_START] } }, select: { id: true } });
  let cancelledRuns = 0;
  for (const run of waiting) {
    if (await cancelBeforeStart(tx, actor, run.id, "The agent was revoked.", { reason: "agent_revoked" })) cancelledRuns++;
  }
  await tx.run.updateMany({ where: { agentId, status: "running", cancelRequestedAt: null }, data: { cancelRequestedAt: new Date() } });
  return { revokedTokens, cancelledRuns };
}
