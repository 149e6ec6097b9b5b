/**
 * The agent-facing MCP server: eight tools whose names and argument names are a public contract
 * (defined from zod in lib/mcp/tools.ts). Built per request for one authenticated agent
 * (lib/mcp/http.ts), so every handler acts as that agent and nobody else.
 *
 * Error contract (one mapper for the tool and the task path, lib/mcp/errors.ts):
 * - malformed calls (unknown tool, arguments that fail the closed schema, oversize code) are
 *   JSON-RPC protocol errors (InvalidParams) with a message naming the problem;
 * - outcomes an agent should act on (missing scope, unknown run, idempotency conflict, budget
 *   exceeded) are tool results with `isError: true` and a typed `code` in the JSON text — or, for
 *   submit_run as a task, which is created or refused, InvalidRequest `CODE: message`;
 * - a run that was denied, rejected or failed is an `isError: true` result carrying the run;
 * - anything unexpected is logged server-side and answered as an internal error without details.
 *
 * Results carry `structuredContent` (matching the tool's outputSchema) and the same JSON as text.
 *
 * Audit (lib/mcp/audit.ts): search_tools and list_inputs are recorded (`tools.searched`,
 * `inputs.listed`), results of runs over regulated data as `run.result_read`, and a missing scope
 * as `auth.forbidden` with the door `mcp:<tool>` — each before the agent gets the answer.
 *
 * The tools/list answer is part of every agent's context: descriptions are short and schemas
 * compact (bench/mcp.ts measures its tokens).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CreateTaskResult } from "@modelcontextprotocol/sdk/experimental/tasks/types.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { recordForbidden } from "@/lib/audit/access";
import { requireScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { appRuntime } from "@/lib/runs/runtime";
import { submitRun } from "@/lib/intake/submit";
import { structuredResult, type McpContext } from "./define";
import { ProtocolError, taskRefusal, toolFailure } from "./errors";
import { runTaskStore, taskOf } from "./tasks";
import { MCP_TOOLS, submitRunTool } from "./tools";

export type { McpContext } from "./define";

export const TOOLS = MCP_TOOLS.map((tool) => tool.listing);
const BY_NAME = new Map(MCP_TOOLS.map((tool) => [tool.name, tool]));

/** submit_run as an MCP task: answers at once with the task; tasks/get and tasks/result follow the run. */
async function submitAsTask(ctx: McpContext, args: unknown): Promise<CreateTaskResult> {
  const db = prisma();
  requireScope(ctx.agent, submitRunTool.scope);
  const view = await submitRun(await appRuntime(db), ctx.agent, args ?? {});
  return { task: taskOf(await db.run.findUniqueOrThrow({ where: { id: view.runId } })) };
}

export function createMcpServer(ctx: McpContext): Server {
  const server = new Server(
    { name: "airlock", version: "0.1.0" },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: runTaskStore(prisma(), ctx.agent, (view) => structuredResult(view, Boolean(view.error))),
      instructions:
        "Airlock runs your scripts against governed tools. search_tools (detail full) gives TypeScript declarations; submit_run runs a script under policy and human review; get_run polls.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args, task } = request.params;
    const door = `mcp:${name.slice(0, 64)}`;
    const tool = BY_NAME.get(name);
    try {
      if (!tool) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name)}; tools/list shows the eight tools.`);
      if (task) {
        if (tool !== submitRunTool) throw new ProtocolError(ErrorCode.InvalidParams, `${name} does not run as a task; only submit_run does.`);
        return await submitAsTask(ctx, args);
      }
      return await tool.invoke(args, { ctx, db: prisma(), signal: extra.signal });
    } catch (error) {
      await recordForbidden(prisma(), ctx.agent, error, door);
      if (task) throw taskRefusal(error);
      return toolFailure(error);
    }
  });
  return server;
}
