/**
 * MCP Tasks (spec 2025-11-25; SDK 1.32 experimental) for submit_run: the task id is the run id
 * and the task's state is read from the run row on every call, so a task survives reconnects,
 * restarts and load balancing across web processes — nothing lives in memory.
 *
 * Run status → task status: submitted, previewing, approved, queued, running, and waiting for
 * reviewers (pending review, pending release) → `working`, with a statusMessage saying which;
 * succeeded → `completed`; denied, rejected, changes requested, expired, failed, timed out →
 * `failed`; cancelled → `cancelled`. Never `input_required`: the spec has a client answer that with
 * tasks/result, which here would only block until reviewers decide (and SDK clients time it out),
 * while nothing the client could send would help. An agent only ever sees
 * its own runs. Results are the same tool result submit_run/get_run return; they are never stored
 * through this interface (storeTaskResult is refused).
 *
 * Errors leave the store already mapped by the door's one mapper (lib/mcp/errors.ts): the SDK wraps
 * what tasks/list and tasks/cancel throw into its own error with the message inside, so a raw one
 * (a database's) would reach the agent; an unexpected one is logged and told as "Internal error".
 *
 * Audit: a missing scope is recorded as `auth.forbidden` (door `mcp:tasks/<method>`), and
 * tasks/result of a run over regulated data as `run.result_read` (lib/mcp/audit.ts), before the
 * answer is sent. tasks/get and tasks/list return no results and record nothing.
 */
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { ErrorCode, type Result, type Task } from "@modelcontextprotocol/sdk/types.js";
import { ProtocolError, requestRefusal } from "./errors";
import { recordForbidden } from "@/lib/audit/access";
import { requireScope, type Scope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import type { Run } from "@/lib/generated/prisma/client";
import { cancelRunAndWait } from "@/lib/runs/cancel";
import { startedRunChanges } from "@/lib/runs/runtime";
import { runColumn } from "@/lib/contracts/run-columns";
import { presentRun, runAsAgentSees, runErrorCode, type AgentActor, type RunView } from "@/lib/runs/service";
import { recordResultRead } from "./audit";

export const TASK_POLL_INTERVAL_MS = 2000;
const PAGE = 50;

const TASK_STATUS = {
  submitted: "working",
  analyzed: "working",
  auto_approved: "working",
  approved: "working",
  queued: "working",
  running: "working",
  previewing: "working",
  pending_review: "working",
  pending_release: "working",
  succeeded: "completed",
  denied: "failed",
  rejected: "failed",
  changes_requested: "failed",
  expired: "failed",
  failed: "failed",
  timed_out: "failed",
  check_failed: "failed",
  withheld: "failed",
  cancelled: "cancelled",
} as const satisfies Record<Run["status"], Task["status"]>;

function statusMessage(run: Run): string | undefined {
  if (run.status === "previewing") return "Building the plan of writes reviewers will approve (a dry run; nothing is written).";
  if (run.status === "pending_review") return `Waiting for ${run.approvalsRequired} reviewer approval(s) in the console; keep polling tasks/get.`;
  if (run.status === "pending_release") return "Ran; policy holds the result until a reviewer releases it in the console; keep polling tasks/get.";
  if (run.status === "queued") return "Approved; waiting for an executor.";
  if (run.status === "running") return "Running in the sandbox.";
  if (TASK_STATUS[run.status] === "failed") {
    // The code and, for a denial, the deciding policies: Airlock's own words, which a client that
    // never calls tasks/result on a failed task (the SDK's stream) still shows.
    const code = runErrorCode(run);
    const policies = run.status === "denied" ? (runColumn(run, "decisionReasons") ?? []).map((r) => r.policyId).join(", ") : "";
    const why = code ? ` (${code}${policies ? `: ${policies}` : ""})` : "";
    return `Run ${run.status.replaceAll("_", " ")}${why}; tasks/result has the reasons.`;
  }
  return undefined;
}

/** The task of a run, as its agent may see the run now (lib/runs/service.ts runAsAgentSees). */
export function taskOf(stored: Run): Task {
  const run = runAsAgentSees(stored);
  return {
    taskId: run.id,
    status: TASK_STATUS[run.status],
    ttl: null,
    createdAt: run.createdAt.toISOString(),
    lastUpdatedAt: run.updatedAt.toISOString(),
    pollInterval: TASK_POLL_INTERVAL_MS,
    ...(statusMessage(run) ? { statusMessage: statusMessage(run) } : {}),
  };
}

/** The store with every method's failure mapped before the SDK sees it (see the header). */
export function runTaskStore(db: Db, agent: AgentActor, toResult: (view: RunView) => Result): TaskStore {
  const store = unmappedTaskStore(db, agent, toResult);
  const mapped = {} as Record<keyof TaskStore, unknown>;
  for (const method of Object.keys(store) as (keyof TaskStore)[]) {
    const call = store[method] as (...args: unknown[]) => Promise<unknown>;
    mapped[method] = async (...args: unknown[]) => {
      try {
        return await call(...args);
      } catch (error) {
        throw requestRefusal(error, `tasks store ${method}`);
      }
    };
  }
  return mapped as TaskStore;
}

function unmappedTaskStore(db: Db, agent: AgentActor, toResult: (view: RunView) => Result): TaskStore {
  const need = async (scope: Scope, method: string) => {
    try {
      requireScope(agent, scope);
    } catch (error) {
      await recordForbidden(db, agent, error, `mcp:tasks/${method}`);
      throw error;
    }
  };
  const find = async (taskId: string) => {
    if (!/^[0-9a-f-]{36}$/i.test(taskId)) return null;
    return db.run.findFirst({ where: { id: taskId, agentId: agent.id } });
  };
  return {
    async createTask() {
      throw new ProtocolError(ErrorCode.InvalidRequest, "Tasks are created by submit_run only.");
    },
    async getTask(taskId) {
      await need("runs:read", "get");
      const run = await find(taskId);
      return run ? taskOf(run) : null;
    },
    async storeTaskResult() {
      throw new ProtocolError(ErrorCode.InvalidRequest, "Task results are written by Airlock's executor only.");
    },
    async getTaskResult(taskId) {
      await need("runs:read", "result");
      const run = await find(taskId);
      if (!run) throw new ProtocolError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      const view = await presentRun(db, run);
      await recordResultRead(db, agent, view, "tasks/result");
      return toResult(view);
    },
    async updateTaskStatus(taskId, status) {
      if (status !== "cancelled") throw new ProtocolError(ErrorCode.InvalidRequest, "Only cancellation can be requested.");
      // The spec's tasks/cancel answers with the task cancelled: a running run is waited for until it has stopped.
      await cancelRunAndWait({ db, changes: await startedRunChanges() }, agent, taskId).catch(async (error: unknown) => {
        await recordForbidden(db, agent, error, "mcp:tasks/cancel");
        throw error;
      });
    },
    async listTasks(cursor) {
      await need("runs:read", "list");
      const after = cursor ? await find(cursor) : null;
      // A cursor this list never returned would silently restart at page one: a paginating client loops.
      if (cursor && !after) throw new ProtocolError(ErrorCode.InvalidParams, "cursor: not a nextCursor tasks/list returned; start without one.");
      const runs = await db.run.findMany({
        where: {
          agentId: agent.id,
          ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
        },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        take: PAGE,
      });
      return { tasks: runs.map(taskOf), ...(runs.length === PAGE ? { nextCursor: runs.at(-1)!.id } : {}) };
    },
  };
}
