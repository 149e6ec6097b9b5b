/**
 * TypeScript declarations for the tools a script may call, generated from each tool's
 * inputSchema and outputSchema, with descriptions as JSDoc and MCP annotations as JSDoc tags.
 * An argument's constraints TypeScript cannot express (minLength, pattern, minimum, format,
 * maxItems, …) are JSDoc tags on the property, so an agent reads every rule the broker will check
 * before a call; a result's are left out (a script reads results, it does not have to meet their
 * rules, and every tag is paid for in the agent's context). Enums and consts are literal types.
 * A tool without an outputSchema returns `any`: nothing is known of its result, and a type error
 * about it would be noise, not a finding.
 *
 * Guarantees: output is valid TypeScript for any input schema (unknown or unsupported constructs
 * become `unknown`, never a syntax error); upstream text (descriptions, enum strings, property
 * names) is sanitized and escaped so it cannot close a comment or a string literal; recursion and
 * $ref chains are depth-limited. Only local `#/$defs/...` / `#/definitions/...` refs are followed.
 */
import { quarantineText } from "@/lib/contracts/tools";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import type { ToolInfo } from "./types";

type Schema = Record<string, unknown>;
const MAX_DEPTH = 12;
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A comment that fits on one line is written on one (`/** text @tag value *\/`): agents read every token of it. */
const ONE_LINE_DOC = 100;

function doc(text: string | undefined, tags: string[], indent: string): string {
  const lines = [...(text ? sanitizeText(text, 4000).split("\n") : []), ...tags].map((l) => l.replace(/\*\//g, "*\\/").trimEnd());
  if (lines.length === 0) return "";
  const oneLine = lines.join(" ");
  if (oneLine.length <= ONE_LINE_DOC) return `${indent}/** ${oneLine} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

/** JSON Schema keywords that restrict a value beyond its type, shown as `@keyword value`. */
const CONSTRAINTS = [
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
] as const;

function constraintTags(schema: unknown): string[] {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return [];
  const s = schema as Schema;
  // zod's int() bounds every integer by ±MAX_SAFE_INTEGER: true of every JSON number a script sends, and noise to read.
  const safeBound = (name: string) =>
    (name === "minimum" && s[name] === Number.MIN_SAFE_INTEGER) || (name === "maximum" && s[name] === Number.MAX_SAFE_INTEGER);
  return CONSTRAINTS.filter((name) => ["string", "number", "boolean"].includes(typeof s[name]) && !safeBound(name)).map(
    (name) => `@${name} ${typeof s[name] === "string" ? sanitizeText(String(s[name]), 200) : String(s[name])}`,
  );
}

function key(name: string): string {
  return IDENT.test(name) ? name : JSON.stringify(sanitizeText(name, 200));
}

function literal(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(sanitizeText(value, 200));
  if (typeof value === "number" || typeof value === "boolean" || value === null) return JSON.stringify(value);
  return "unknown";
}

/** Arguments carry their constraints as tags; results do not. */
type Side = "args" | "result";

function schemaToType(schema: unknown, side: Side, root: unknown = schema, depth = 0, indent = ""): string {
  if (depth > MAX_DEPTH || schema === null || typeof schema !== "object" || Array.isArray(schema)) return "unknown";
  const s = schema as Schema;
  const sub = (x: unknown, subIndent = indent) => schemaToType(x, side, root, depth + 1, subIndent);
  if (typeof s.$ref === "string") {
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(s.$ref);
    const defs = m && (root as Schema)?.[m[1]!];
    const target = defs && typeof defs === "object" ? (defs as Schema)[m![2]!] : undefined;
    return target ? sub(target) : "unknown";
  }
  if ("const" in s) return literal(s.const);
  if (Array.isArray(s.enum)) return s.enum.map(literal).join(" | ") || "never";
  for (const combinator of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(s[combinator])) return (s[combinator] as unknown[]).map((x) => sub(x)).join(" | ") || "unknown";
  }
  if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((x) => `(${sub(x)})`).join(" & ") || "unknown";
  if (Array.isArray(s.type)) return s.type.map((t) => sub({ ...s, type: t })).join(" | ");
  switch (s.type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `Array<${sub(s.items)}>`;
    case "object":
    case undefined: {
      const props = s.properties && typeof s.properties === "object" ? (s.properties as Record<string, unknown>) : undefined;
      if (!props && s.type === undefined) return "unknown";
      const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : []);
      const inner = `${indent}  `;
      const members = Object.entries(props ?? {}).map(([name, property]) => {
        const description =
          property && typeof property === "object" && typeof (property as Schema).description === "string"
            ? ((property as Schema).description as string)
            : undefined;
        const tags = side === "args" ? constraintTags(property) : [];
        return `${doc(description, tags, inner)}${inner}${key(name)}${required.has(name) ? "" : "?"}: ${sub(property, inner)};`;
      });
      const extra = s.additionalProperties;
      if (extra && typeof extra === "object") members.push(`${inner}[key: string]: ${sub(extra, inner)};`);
      else if (!props && extra !== false) members.push(`${inner}[key: string]: unknown;`);
      return members.length === 0 ? "{}" : `{\n${members.join("\n")}\n${indent}}`;
    }
    default:
      return "unknown";
  }
}

/** MCP says these hints mean something only when a tool is not read-only. */
const WRITE_HINTS = new Set(["destructiveHint", "idempotentHint"]);

function annotationTags(tool: ToolInfo): string[] {
  // The MCP hints on the data class's line: `@dataClass internal @readOnlyHint true @openWorldHint false`.
  const readOnly = tool.annotations?.readOnlyHint === true;
  const hints = Object.entries(tool.annotations ?? {}).flatMap(([name, value]) =>
    typeof value === "boolean" && !(readOnly && WRITE_HINTS.has(name)) ? [`@${name} ${value}`] : [],
  );
  const tags: string[] = [[`@dataClass ${tool.dataClass}`, ...hints].join(" ")];
  if (tool.quarantined) tags.push(`@quarantined calls are refused: ${quarantineText(tool.quarantineReason)}`);
  return tags;
}

/** `declare const tools: { server: { tool(args): Promise<Output> } }` for the given tools. */
export function generateDeclarations(tools: readonly ToolInfo[]): string {
  const byServer = new Map<string, ToolInfo[]>();
  for (const tool of tools) byServer.set(tool.server, [...(byServer.get(tool.server) ?? []), tool]);
  const servers = [...byServer].map(([server, list]) => `  ${key(server)}: {\n${list.map(methodDeclaration).join("\n")}\n  };`);
  return `declare const tools: {\n${servers.join("\n")}\n};\n`;
}

type Declared = { name: string; inputSchema: Schema; outputSchema: Schema | null; heading: string; text: string };

/**
 * Every submission's analysis declares the tools again, and a schema's type is most of the work:
 * a tool's declaration is kept with the tool and written anew when its name, its schemas (by
 * identity: a listing brings new objects, never edits old ones) or its comment (description,
 * annotations, data class, quarantine) differ from what it was written from.
 */
const declared = new WeakMap<ToolInfo, Declared>();

function methodDeclaration(tool: ToolInfo): string {
  const heading = doc(tool.description, annotationTags(tool), "    ");
  const kept = declared.get(tool);
  if (kept && kept.name === tool.name && kept.inputSchema === tool.inputSchema && kept.outputSchema === tool.outputSchema && kept.heading === heading)
    return kept.text;
  const input = schemaToType(tool.inputSchema, "args", tool.inputSchema, 0, "    ");
  const output = tool.outputSchema ? schemaToType(tool.outputSchema, "result", tool.outputSchema, 0, "    ") : "any";
  const text = `${heading}    ${key(tool.name)}(args: ${input}): Promise<${output}>;`;
  declared.set(tool, { name: tool.name, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, heading, text });
  return text;
}
