/**
 * The agent-facing MCP server (issue 4): five tools whose names and argument names are a public
 * contract. Built per request for one authenticated agent (lib/mcp/http.ts), so every handler
 * acts as that agent and nobody else.
 *
 * Error contract:
 * - malformed calls (unknown tool, arguments that fail the closed schema, oversize code) are
 *   JSON-RPC protocol errors (InvalidParams) with a message naming the problem;
 * - outcomes an agent should act on (policy denial, rejection, failed run, budget exceeded,
 *   missing scope, unknown run, idempotency conflict) are tool results with `isError: true` and a
 *   typed `code` in the JSON text;
 * - anything unexpected is logged server-side and answered as an internal error without details.
 *
 * Audit (lib/mcp/audit.ts): search_tools and list_inputs are recorded (`tools.searched`,
 * `inputs.listed`), results of runs over regulated data as `run.result_read`, and a missing scope
 * as `auth.forbidden` with the door `mcp:<tool>` — each before the agent gets the answer.
 *
 * The tools/list answer is part of every agent's context: descriptions are short and schemas
 * plain JSON Schema (bench/mcp.ts measures its tokens).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CreateTaskResult } from "@modelcontextprotocol/sdk/experimental/tasks/types.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { recordForbidden } from "@/lib/audit/access";
import { requireScope } from "@/lib/auth/scopes";
import { prisma, type Db } from "@/lib/db";
import { AppError, isAppError } from "@/lib/errors";
import { appRuntime } from "@/lib/runs/runtime";
import { listDatasets } from "@/lib/runs/datasets";
import { cancelRun } from "@/lib/runs/cancel";
import { BudgetExceeded, getRun, submitRun, type AgentActor, type RunView } from "@/lib/runs/service";
import { recordAgentRead, recordResultRead, type ResultDoor } from "./audit";
import { runTaskStore, taskOf } from "./tasks";

export type McpContext = { agent: AgentActor; baseUrl: string };

const str = (description: string, extra: Record<string, unknown> = {}) => ({ type: "string", description, ...extra });

export const TOOLS: Tool[] = [
  {
    name: "search_tools",
    description:
      "Find the tools a script can call as `await tools.<server>.<tool>(args)`. detail: name | summary (default) | full (TypeScript declarations to write the script against).",
    inputSchema: {
      type: "object",
      properties: {
        query: str("Words to match in tool names and descriptions; omit to list all"),
        server: str("Only this upstream server"),
        detail: { type: "string", enum: ["name", "summary", "full"] },
      },
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: "submit_run",
    description:
      "Submit a script (the body of an async function; may `await tools.<server>.<tool>(args)`, read `inputs`, and `return` JSON). Policy allows, escalates to human review, or denies it with reasons. Returns the run, and its result when it finished quickly; otherwise poll get_run.",
    inputSchema: {
      type: "object",
      properties: {
        code: str("The script"),
        purpose: str("What the script is for, for reviewers and the audit log"),
        language: { type: "string", enum: ["typescript", "javascript"], description: "Default typescript" },
        inputs: { type: "array", items: { type: "string" }, description: "Dataset names from list_inputs" },
        idempotencyKey: str("Resubmitting the same body with the same key returns the same run"),
        provenance: {
          type: "object",
          properties: { model: { type: "string" }, conversationId: { type: "string" }, prompt: { type: "string" } },
          additionalProperties: false,
        },
      },
      required: ["code", "purpose"],
      additionalProperties: false,
    },
    execution: { taskSupport: "optional" },
  },
  {
    name: "get_run",
    description: "Status, decision, reviewer comments and, when finished, the result of a run. waitSeconds (max 60) waits for a change.",
    inputSchema: {
      type: "object",
      properties: { runId: str("From submit_run"), waitSeconds: { type: "number", minimum: 0, maximum: 60 } },
      required: ["runId"],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: "cancel_run",
    description: "Cancel a run that has not finished.",
    inputSchema: { type: "object", properties: { runId: str("From submit_run") }, required: ["runId"], additionalProperties: false },
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  {
    name: "list_inputs",
    description: "Datasets you may pass to submit_run as inputs, with their data classes and sizes.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true },
  },
];

const searchSchema = z
  .object({ query: z.string().max(200).optional(), server: z.string().max(64).optional(), detail: z.enum(["name", "summary", "full"]).default("summary") })
  .strict();

function json(value: unknown, isError = false): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], ...(isError ? { isError: true } : {}) };
}

function runResult(view: RunView): CallToolResult {
  return json(view, Boolean(view.error));
}

/** A run's view as a tool result, after recording a regulated result read (lib/mcp/audit.ts). */
async function auditedRunResult(db: Db, ctx: McpContext, view: RunView, via: ResultDoor): Promise<CallToolResult> {
  await recordResultRead(db, ctx.agent, view.runId, { via, hasResult: view.result !== undefined || view.logs !== undefined });
  return runResult(view);
}

function parseOrThrow<T>(schema: z.ZodType<T>, raw: unknown): T {
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AppError("bad_request", `${issue?.path.join(".") || "arguments"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

/** Waits this long for an auto-approved run to finish before submit_run answers. */
const SUBMIT_WAIT_SECONDS = 10;

/** submit_run as an MCP task: answers at once with the task; tasks/get and tasks/result follow the run. */
async function submitAsTask(ctx: McpContext, args: unknown): Promise<CreateTaskResult> {
  const db = prisma();
  const view = await submitRun(await appRuntime(db), ctx.agent, args);
  return { task: taskOf(await db.run.findUniqueOrThrow({ where: { id: view.runId } })) };
}

async function callTool(ctx: McpContext, name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
  const db = prisma();
  switch (name) {
    case "search_tools": {
      requireScope(ctx.agent, "tools:read");
      const input = parseOrThrow(searchSchema, args);
      const { broker } = await appRuntime(db);
      const hits = broker.search(input.query ?? "", input.detail, 50).filter((hit) => !input.server || hit.server === input.server);
      await recordAgentRead(db, ctx.agent, {
        action: "tools.searched",
        subject: { type: "tool_registry" },
        data: { query: input.query ?? null, server: input.server ?? null, detail: input.detail, results: hits.length },
      });
      return json({ tools: hits });
    }
    case "submit_run": {
      const runtime = await appRuntime(db);
      const view = await submitRun(runtime, ctx.agent, args);
      if (view.status !== "queued") return auditedRunResult(db, ctx, view, "submit_run");
      return auditedRunResult(db, ctx, await getRun(runtime, ctx.agent, { runId: view.runId, waitSeconds: SUBMIT_WAIT_SECONDS }, signal), "submit_run");
    }
    case "get_run":
      return auditedRunResult(db, ctx, await getRun({ db }, ctx.agent, args ?? {}, signal), "get_run");
    case "cancel_run": {
      const { runId } = parseOrThrow(z.object({ runId: z.string() }).strict(), args);
      return json(await cancelRun({ db }, ctx.agent, runId));
    }
    case "list_inputs": {
      requireScope(ctx.agent, "inputs:read");
      parseOrThrow(z.object({}).strict(), args);
      const inputs = await listDatasets(db);
      await recordAgentRead(db, ctx.agent, { action: "inputs.listed", subject: { type: "dataset_list" }, data: { count: inputs.length } });
      return json({ inputs });
    }
    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name)}; tools/list shows the five tools.`);
  }
}

function toResultOrProtocolError(error: unknown): CallToolResult {
  if (error instanceof McpError) throw error;
  if (error instanceof BudgetExceeded) return json({ error: { code: "BUDGET_EXCEEDED", message: error.message } }, true);
  if (isAppError(error)) {
    if (error.code === "bad_request" || error.code === "payload_too_large") throw new McpError(ErrorCode.InvalidParams, error.message);
    return json({ error: { code: error.code.toUpperCase(), message: error.message } }, true);
  }
  console.error("mcp tool failed", error);
  throw new McpError(ErrorCode.InternalError, "Internal error");
}

export function createMcpServer(ctx: McpContext): Server {
  const server = new Server(
    { name: "airlock", version: "0.1.0" },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: runTaskStore(prisma(), ctx.agent, runResult),
      instructions:
        "Airlock runs your scripts against governed tools. search_tools (detail full) gives TypeScript declarations; submit_run runs a script under policy and human review; get_run polls.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const door = `mcp:${request.params.name.slice(0, 64)}`;
    try {
      if (request.params.task) {
        if (request.params.name !== "submit_run")
          throw new McpError(ErrorCode.InvalidParams, `${request.params.name} does not run as a task; only submit_run does.`);
        return await submitAsTask(ctx, request.params.arguments).catch(async (error: unknown) => {
          // A task is created or refused: every refusal is a protocol error naming the reason.
          await recordForbidden(prisma(), ctx.agent, error, door);
          if (error instanceof BudgetExceeded) throw new McpError(ErrorCode.InvalidRequest, `BUDGET_EXCEEDED: ${error.message}`);
          if (isAppError(error))
            throw new McpError(
              error.code === "bad_request" || error.code === "payload_too_large" ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest,
              error.message,
            );
          throw error;
        });
      }
      return await callTool(ctx, request.params.name, request.params.arguments, extra.signal);
    } catch (error) {
      await recordForbidden(prisma(), ctx.agent, error, door);
      return toResultOrProtocolError(error);
    }
  });
  return server;
}
