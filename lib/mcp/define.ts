/**
 * One MCP tool = one definition: name, description, closed zod input schema, zod output schema,
 * annotations, the scope it needs and its handler. tools/list's `inputSchema` and `outputSchema`
 * are generated from the zod schemas, so what an agent is told is exactly what is enforced.
 *
 * Generated schemas are kept compact, because tools/list sits in every agent's context
 * (bench/mcp.ts measures it): no `$schema`, no regex `pattern` next to a `format` that says the
 * same, no `additionalProperties: false` or `required` on outputs (an agent never sends them; a
 * client validating a result against a looser schema still accepts every result), and argument
 * descriptions only where the name does not say it.
 *
 * Results carry `structuredContent` (which conforms to the output schema) and the same value as
 * JSON text: `text === JSON.stringify(structuredContent)`. One exception, named by `textField`: a
 * string field meant to be read as it is, which states everything else the value holds
 * (search_tools' TypeScript declaration names every tool, skill and global it found), is, when
 * present, the whole text, unescaped; the structured value still holds every field. Escaped inside
 * JSON, a declaration costs an agent about a sixth more tokens and reads worse, and the JSON of the
 * rest would repeat what it says.
 */
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { requireScope, type Scope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { invalidArguments } from "@/lib/errors";
import type { AgentActor, Follow } from "@/lib/runs/service";

/** Who is answered, where, and how this connection can follow a run (lib/runs/service.ts Follow; get_run when not said). */
export type McpContext = { agent: AgentActor; baseUrl: string; follow?: Follow };

/** What a handler gets besides its arguments. */
export type ToolCall = { ctx: McpContext; db: Db; signal: AbortSignal };

/** A handler's answer: a value of the output schema, and whether it is an outcome the agent must act on. */
export type ToolAnswer<T> = { value: T; isError?: boolean };

type Common<I extends z.ZodObject, O extends z.ZodObject> = {
  name: string;
  description: string;
  /** Closed (strict) object schema of the arguments. */
  input: I;
  output: O;
  /** Checked before the arguments are parsed; the service functions check it again. */
  scope: Scope;
  annotations?: ToolAnnotations;
  execution?: Tool["execution"];
  /** Descriptions of arguments whose schema is reused from a service (and so carries none). */
  argDescriptions?: Partial<Record<keyof z.input<I> & string, string>>;
  /** An optional string field of the output that, when present, is the whole text (see the header). */
  textField?: keyof z.output<O> & string;
};

export type ToolDefinition<I extends z.ZodObject, O extends z.ZodObject> = Common<I, O> &
  (
    | { handler: (args: z.output<I>, call: ToolCall) => Promise<ToolAnswer<z.output<O>>> }
    | {
        /** For a service that validates the raw arguments with `input` itself (and audits refusals). */
        rawHandler: (args: unknown, call: ToolCall) => Promise<ToolAnswer<z.output<O>>>;
      }
  );

export type McpTool = {
  name: string;
  scope: Scope;
  /** The tools/list entry. */
  listing: Tool;
  invoke(raw: unknown, call: ToolCall): Promise<CallToolResult>;
};

type JsonNode = { [key: string]: unknown };

function compact(node: unknown, io: "input" | "output"): unknown {
  if (Array.isArray(node)) return node.map((item) => compact(item, io));
  if (!node || typeof node !== "object") return node;
  const out: JsonNode = {};
  for (const [key, value] of Object.entries(node as JsonNode)) {
    if (key === "$schema") continue;
    if (key === "pattern" && "format" in node) continue;
    if (key === "propertyNames" && JSON.stringify(value) === '{"type":"string"}') continue;
    if (key === "additionalProperties" && value === false && io === "output") continue;
    if (key === "required" && Array.isArray(value) && io === "output") continue;
    if (key === "items" && JSON.stringify(value) === "{}") continue;
    out[key] = compact(value, io);
  }
  return out;
}

/** JSON Schema of a zod object schema as tools/list publishes it. */
export function toolJsonSchema(schema: z.ZodObject, io: "input" | "output", descriptions: Record<string, string | undefined> = {}): Tool["inputSchema"] {
  const json = compact(z.toJSONSchema(schema, { io, unrepresentable: "any" }), io) as Tool["inputSchema"];
  for (const [name, description] of Object.entries(descriptions)) {
    const property = json.properties?.[name] as JsonNode | undefined;
    if (!property) throw new Error(`No argument ${name} to describe`);
    if (description) json.properties![name] = { description, ...property };
  }
  return json;
}

/** Parses arguments with a closed schema; a failure is `bad_request` naming the argument. */
export function parseArgs<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) throw invalidArguments(parsed.error);
  return parsed.data;
}

/**
 * A tool result whose text is exactly `JSON.stringify(structuredContent)`; with `textField` naming a
 * string field of the value that is present, the text is that field alone.
 */
export function structuredResult(value: object, isError = false, textField?: string): CallToolResult {
  const json = JSON.stringify(value);
  // Through JSON, so the structured value is exactly what the text says (no undefined, no Dates).
  const structuredContent = JSON.parse(json) as Record<string, unknown>;
  const ownText = textField !== undefined ? structuredContent[textField] : undefined;
  const text = typeof ownText === "string" ? ownText : json;
  return { content: [{ type: "text", text }], structuredContent, ...(isError ? { isError: true } : {}) };
}

export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(definition: ToolDefinition<I, O>): McpTool {
  const listing: Tool = {
    name: definition.name,
    description: definition.description,
    inputSchema: toolJsonSchema(definition.input, "input", definition.argDescriptions),
    outputSchema: toolJsonSchema(definition.output, "output"),
    ...(definition.annotations ? { annotations: definition.annotations } : {}),
    ...(definition.execution ? { execution: definition.execution } : {}),
  };
  return {
    name: definition.name,
    scope: definition.scope,
    listing,
    async invoke(raw, call) {
      requireScope(call.ctx.agent, definition.scope);
      const answer =
        "rawHandler" in definition ? await definition.rawHandler(raw ?? {}, call) : await definition.handler(parseArgs(definition.input, raw), call);
      return structuredResult(answer.value, answer.isError, definition.textField);
    },
  };
}
