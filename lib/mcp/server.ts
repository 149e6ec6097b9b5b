/**
 * The agent-facing MCP server: eight tools whose names and argument names are a public contract
 * (defined from zod in lib/mcp/tools.ts). Built per request for one authenticated agent
 * (lib/mcp/http.ts), so every handler acts as that agent and nobody else.
 *
 * Error contract (one mapper for the tool and the task path, lib/mcp/errors.ts):
 * - malformed requests (an unknown tool or one this connection does not offer, arguments nested
 *   deeper than MAX_ARGUMENT_DEPTH or holding a `__proto__` key, params of any method that fail
 *   the protocol's schema) are JSON-RPC protocol errors (InvalidParams) with a message naming the
 *   problem;
 * - arguments a tool refuses (off its closed schema, oversize code) and outcomes an agent should
 *   act on (missing scope, unknown run, idempotency conflict, budget exceeded) are tool results
 *   with `isError: true` and a typed `code` (BAD_REQUEST, FORBIDDEN, …), a message and what to do
 *   `next` in the JSON text, so the model reads them and can correct the call (MCP 2025-11-25,
 *   SEP-1303) — or, for submit_run as a task, which is created or refused, a protocol error
 *   (InvalidParams for arguments, InvalidRequest `CODE: message Next: …` for an outcome);
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
 * compact (bench/mcp.ts measures its tokens), and it lists only the tools the agent's token holds
 * the scope of: a tool it may not call is context spent for nothing (calling one is still answered,
 * FORBIDDEN and audited). A connection may offer fewer tools: the client names
 * them in the endpoint's URL, `/api/mcp?tools=search_tools,submit_run,get_run` (selectTools), and
 * the others are neither listed nor callable on it. A selection only narrows what is offered;
 * each tool still checks its scope.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CreateTaskResult } from "@modelcontextprotocol/sdk/experimental/tasks/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { CallToolRequestSchema, ClientRequestSchema, ErrorCode, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { recordForbidden } from "@/lib/audit/access";
import { hasScope, requireScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { appRuntime } from "@/lib/runs/runtime";
import type { Follow } from "@/lib/runs/service";
import { submitRun } from "@/lib/intake/submit";
import { nearestName } from "@/lib/edit-distance";
import { AppError, echoedText } from "@/lib/errors";
import { structuredResult, type McpContext, type McpTool } from "./define";
import { ProtocolError, requestRefusal, toolFailure } from "./errors";
import { runTaskStore, taskOf } from "./tasks";
import { agentView, MCP_TOOLS, submitRunTool } from "./tools";

export type { McpContext } from "./define";

const BY_NAME = new Map(MCP_TOOLS.map((tool) => [tool.name, tool]));
const TOOL_NAMES = MCP_TOOLS.map((tool) => tool.name).join(", ");

/**
 * The tools a connection offers, from the endpoint URL's query: every tool without one, else the
 * comma-separated names of `tools` (each once, at least one). Any other parameter, a repeated one
 * or an unknown name is `bad_request`, naming the problem and the tools there are.
 */
export function selectTools(query: URLSearchParams): readonly McpTool[] {
  const keys = [...query.keys()];
  const unknown = keys.find((key) => key !== "tools");
  if (unknown !== undefined)
    throw new AppError("bad_request", `Unknown query parameter ${JSON.stringify(unknown.slice(0, 64))}; the endpoint takes only tools=<names>.`);
  if (keys.length === 0) return MCP_TOOLS;
  if (keys.length > 1) throw new AppError("bad_request", "tools= is given more than once; name the tools once, separated by commas.");
  const names = query.get("tools")!.split(",");
  const bad = names.find((name) => !BY_NAME.has(name));
  if (bad !== undefined) throw new AppError("bad_request", `tools=: ${JSON.stringify(bad.slice(0, 64))} is not a tool; the tools are ${TOOL_NAMES}.`);
  if (new Set(names).size !== names.length) throw new AppError("bad_request", "tools=: a tool is named twice.");
  return MCP_TOOLS.filter((tool) => names.includes(tool.name));
}

/** How an answer tells this connection to follow a run: the token must read runs, and get_run be offered, or tasks serve. */
function followOf(agent: McpContext["agent"], offered: readonly McpTool[]): Follow {
  if (!hasScope(agent, "runs:read")) return "none";
  return offered.some((tool) => tool.name === "get_run") ? "get_run" : "tasks";
}

/** submit_run as an MCP task: answers at once with the task; tasks/get and tasks/result follow the run. */
async function submitAsTask(ctx: McpContext, args: unknown): Promise<CreateTaskResult> {
  const db = prisma();
  requireScope(ctx.agent, submitRunTool.scope);
  const view = await submitRun(await appRuntime(db), ctx.agent, args ?? {});
  return { task: taskOf(await db.run.findUniqueOrThrow({ where: { id: view.runId } })) };
}

/**
 * The SDK's server validates only what a client answers to an elicitation, and Airlock never asks
 * a client for input: every schema is refused. Given to each per-request server, it spares each
 * the JSON Schema compiler the SDK would otherwise build for it (about half a millisecond).
 */
const NO_ELICITATION: jsonSchemaValidator = {
  getValidator: () => () => ({ valid: false, data: undefined, errorMessage: "Airlock asks clients for no input" }),
};

/**
 * Tool arguments nested deeper than this are refused at the door. No tool takes more than a few
 * levels, and a deeper value only exhausts the stack of whatever walks it next (the analyser, a
 * digest) instead of getting an answer.
 */
export const MAX_ARGUMENT_DEPTH = 64;

/**
 * Why a tool's arguments are refused before any tool sees them, or null: nested deeper than
 * MAX_ARGUMENT_DEPTH, or holding a `__proto__` key anywhere (JSON.parse makes it an own property,
 * which some schema checks skip; no tool takes one). Walked without recursion.
 */
function argumentsRefusal(value: unknown): string | null {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [item, level] = pending.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (level > MAX_ARGUMENT_DEPTH) return `The arguments are nested deeper than ${MAX_ARGUMENT_DEPTH} levels; no tool takes that.`;
    if (!Array.isArray(item) && Object.hasOwn(item, "__proto__")) return "The arguments hold a __proto__ key; no tool takes one.";
    for (const child of Array.isArray(item) ? item : Object.values(item)) pending.push([child, level + 1]);
  }
  return null;
}

const REQUEST_SCHEMAS = new Map(ClientRequestSchema.options.map((schema) => [schema.shape.method.value as string, schema]));
type RequestHandlers = Map<string, (request: { method: string; params?: { arguments?: unknown } }, extra: unknown) => Promise<unknown>>;

/**
 * Guards every handler the server has, the SDK's own (initialize, ping, tasks/*) included, on the
 * request as it arrived (the SDK's parse, which runs inside the handler, drops a `__proto__` key):
 * - tools/call arguments that argumentsRefusal refuses are InvalidParams before anything runs;
 * - params that fail the protocol's schema are InvalidParams naming the first problem in one line
 *   (the SDK would answer InternalError with zod's multi-line dump);
 * - any other failure goes through the door's one mapper (lib/mcp/errors.ts): the SDK's McpError
 *   without the prefix it would repeat, anything unexpected logged and answered without its message.
 */
function guardRequests(server: Server): void {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) throw new Error("The MCP SDK no longer keeps _requestHandlers; guardRequests must follow it");
  for (const [method, handler] of handlers as RequestHandlers) {
    const schema = REQUEST_SCHEMAS.get(method);
    if (!schema) continue;
    (handlers as RequestHandlers).set(method, async (request, extra) => {
      const refused = method === "tools/call" ? argumentsRefusal(request.params?.arguments) : null;
      if (refused) throw new ProtocolError(ErrorCode.InvalidParams, refused);
      try {
        return await handler(request, extra);
      } catch (error) {
        const parsed = schema.safeParse(request);
        if (parsed.success) throw requestRefusal(error, method);
        const issue = parsed.error.issues[0]!;
        const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
        throw new ProtocolError(ErrorCode.InvalidParams, `Invalid ${method} request: ${where}${issue.message}`.slice(0, 500));
      }
    });
  }
}

/** The server for one request, offering `offered` (every tool unless a selection narrows it). */
/** Why a tools/call names no tool of Airlock's: the offered tool it likely meant, or where upstream tools are called. */
function unknownToolText(name: string, offered: readonly McpTool[]): string {
  const shown = JSON.stringify(echoedText(name, 64));
  const near = nearestName(
    name,
    offered.map((tool) => tool.name),
  );
  if (near) return `Unknown tool ${shown}; did you mean ${near}?`;
  return `Unknown tool ${shown}; tools/list shows Airlock's tools. An upstream's tools (search_tools finds them) are called in a script given to submit_run${offered.some((tool) => tool.name === "call_tool") ? ", or one at a time with call_tool" : ""}.`;
}

export function createMcpServer(connection: McpContext, offered: readonly McpTool[] = MCP_TOOLS): Server {
  const ctx: McpContext = { ...connection, follow: followOf(connection.agent, offered) };
  // Listed: the offered tools this agent's token may call. Calling another is still answered (FORBIDDEN, audited).
  // A token that cannot read runs cannot follow a task (tasks/get needs runs:read): submit_run is not offered as one.
  const followsTasks = ctx.follow !== "none";
  const listing = offered
    .filter((tool) => hasScope(ctx.agent, tool.scope))
    .map((tool) => (followsTasks || !tool.listing.execution ? tool.listing : { ...tool.listing, execution: { taskSupport: "forbidden" as const } }));
  const byName = new Map(offered.map((tool) => [tool.name, tool]));
  const server = new Server(
    { name: "airlock", version: "0.1.0" },
    {
      // Declared for every token, so a task a token may not start reaches the handler and is refused there by name.
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: runTaskStore(prisma(), ctx.agent, (view) => structuredResult(agentView(view), Boolean(view.error))),
      jsonSchemaValidator: NO_ELICITATION,
      instructions:
        "Airlock runs your scripts against governed tools. search_tools (detail full) gives TypeScript declarations; submit_run runs a script under policy and human review; get_run polls.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listing }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args, task } = request.params;
    const door = `mcp:${name.slice(0, 64)}`;
    const tool = byName.get(name);
    try {
      if (!tool) {
        const why = BY_NAME.has(name)
          ? `${name} is not offered on this connection, whose URL selects ${offered.map((t) => t.name).join(", ")} (?tools=).`
          : unknownToolText(name, offered);
        throw new ProtocolError(ErrorCode.InvalidParams, why);
      }
      if (task) {
        if (tool !== submitRunTool) throw new ProtocolError(ErrorCode.InvalidParams, `${name} does not run as a task; only submit_run does.`);
        if (!followsTasks) {
          throw new ProtocolError(
            ErrorCode.InvalidParams,
            "This token lacks runs:read, so it could not follow a task (tasks/get and tasks/result need it); call submit_run without task.",
          );
        }
        return await submitAsTask(ctx, args);
      }
      return await tool.invoke(args, { ctx, db: prisma(), signal: extra.signal });
    } catch (error) {
      await recordForbidden(prisma(), ctx.agent, error, door);
      if (task) throw requestRefusal(error, "submit_run task");
      return toolFailure(error);
    }
  });
  guardRequests(server);
  return server;
}
