/**
 * The one error mapper of the MCP door, shared by tools/call and submit_run as a task, so both
 * classify a failure the same way (lib/mcp/server.ts header has the contract):
 *
 * | failure                                             | class        | tool path                    | task path               |
 * |-----------------------------------------------------|--------------|------------------------------|-------------------------|
 * | McpError already (unknown tool, tool not offered,   | protocol     | rethrown                     | rethrown                |
 * | task not supported)                                 |              |                              |                         |
 * | AppError bad_request / payload_too_large            | malformed    | isError result               | InvalidParams           |
 * | (arguments that fail the tool's schema, too big)    |              | (BAD_REQUEST, …)             |                         |
 * | any other AppError (forbidden, not_found, conflict, | outcome      | isError result               | InvalidRequest          |
 * | BUDGET_EXCEEDED, USE_SUBMIT_RUN, …)                 |              | `{error: {code, message,     | `CODE: message Next:    |
 * |                                                     |              | next}}`                      | next`                   |
 * | anything else                                       | unexpected   | logged, InternalError        | logged, InternalError   |
 *
 * Arguments a tool refuses are a result the model reads, not a protocol error a client may keep
 * from it (MCP 2025-11-25, SEP-1303: input validation errors are tool execution errors), so the
 * agent can correct the call. On the task path a task is created or refused, so an outcome is a
 * protocol error there. Every outcome says what the agent should do `next`, as a run's error does
 * (lib/errors.ts): the error's own when its thrower knows better (AppError.next), else its code's.
 * Protocol errors are thrown as ProtocolError, never as the SDK's McpError: McpError writes
 * "MCP error <code>: " into its own message, which goes out as the JSON-RPC message, and the
 * client's McpError adds the prefix again ("MCP error -32602: MCP error -32602: …").
 * An outcome's result has no structuredContent: it is not a value of the tool's output schema
 * (clients validate structuredContent against it even for isError results).
 */
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { isAppError, RUN_ERROR_RULES, type AppErrorCode } from "@/lib/errors";
import { BudgetExceeded, DirectCallRefused } from "@/lib/intake/submit";

/** A JSON-RPC error as the SDK sends it: its code, and its message as is. */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

export type McpFailure =
  | { kind: "protocol"; error: ProtocolError }
  | { kind: "malformed"; code: string; message: string; next: string }
  | { kind: "outcome"; code: string; message: string; next: string }
  | { kind: "unexpected"; error: unknown };

const NOT_THE_AGENTS_FAULT = "This is not the agent's fault: try again later, and tell the user if it persists.";

/** What an agent should do after each AppError that reaches it as a tool's outcome. */
const OUTCOME_NEXT: Record<AppErrorCode, string> = {
  bad_request: "Fix the argument the message names and call again; tools/list has this tool's input schema.",
  payload_too_large: "Send less: the message names the limit.",
  unauthorized: "Send the agent token an Airlock admin issued as `Authorization: Bearer <token>`.",
  forbidden: "This agent's token lacks the scope the message names: ask an Airlock admin to grant it, or do without this tool.",
  not_found: "Check the id: use the one this agent got back (submit_run's runId); other agents' runs and unpublished skills are not visible.",
  conflict: "The run is not in a state that allows this, or the key was used for another request: call get_run for its status, or use a new idempotencyKey.",
  gone: "The data was purged under the retention policy and cannot be read again; tell the user.",
  rate_limited: "Wait a few seconds and try again.",
  config_invalid: NOT_THE_AGENTS_FAULT,
  database_unavailable: NOT_THE_AGENTS_FAULT,
  stored_data_invalid: NOT_THE_AGENTS_FAULT,
  internal: NOT_THE_AGENTS_FAULT,
};

export function classifyMcpError(error: unknown): McpFailure {
  if (error instanceof ProtocolError) return { kind: "protocol", error };
  // The SDK's own (unknown task, a closed connection): sent with its message, without the prefix it carries.
  if (error instanceof McpError) return { kind: "protocol", error: new ProtocolError(error.code, error.message.replace(/^MCP error -?\d+: /, "")) };
  if (error instanceof BudgetExceeded || error instanceof DirectCallRefused) {
    return { kind: "outcome", code: error.runCode, message: error.message, next: error.next ?? RUN_ERROR_RULES[error.runCode].next };
  }
  if (isAppError(error)) {
    const kind = error.code === "bad_request" || error.code === "payload_too_large" ? "malformed" : "outcome";
    return { kind, code: error.code.toUpperCase(), message: error.message, next: error.next ?? OUTCOME_NEXT[error.code] };
  }
  return { kind: "unexpected", error };
}

function protocolError(failure: Exclude<McpFailure, { kind: "outcome" }>, path: string): ProtocolError {
  switch (failure.kind) {
    case "protocol":
      return failure.error;
    case "malformed":
      return new ProtocolError(ErrorCode.InvalidParams, failure.message);
    case "unexpected":
      console.error(`mcp ${path} failed`, failure.error);
      return new ProtocolError(ErrorCode.InternalError, "Internal error");
  }
}

/** tools/call: an outcome or malformed arguments become an isError result; everything else is thrown as a protocol error. */
export function toolFailure(error: unknown): CallToolResult {
  const failure = classifyMcpError(error);
  if (failure.kind === "protocol" || failure.kind === "unexpected") throw protocolError(failure, "tool");
  const { code, message, next } = failure;
  return { content: [{ type: "text", text: JSON.stringify({ error: { code, message, next } }) }], isError: true };
}

/**
 * A request that must be answered or refused, not given a result: submit_run as a task, and the
 * SDK's own methods (tasks/*). Every failure refuses it with a protocol error (the one to throw).
 */
export function requestRefusal(error: unknown, method: string): ProtocolError {
  const failure = classifyMcpError(error);
  if (failure.kind === "outcome") return new ProtocolError(ErrorCode.InvalidRequest, `${failure.code}: ${failure.message} Next: ${failure.next}`);
  return protocolError(failure, method);
}
