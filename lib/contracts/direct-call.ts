/**
 * A direct call (call_tool) as the script it is: `return await tools["server"]["tool"](ARGS);` with
 * ARGS the canonical JSON of the arguments. The run of a direct call stores this text as its code,
 * so analysis, policy, the audit log and reviewers see it like any script, and the executor makes
 * exactly the call it names.
 *
 * - directCallScript(server, tool, args): the text (one line).
 * - parseDirectCall(code): the call a text names, or null unless the text is exactly what
 *   directCallScript writes for it (so a run's code and the call made cannot differ).
 * - protoKeyPath(args): the path of the first `__proto__` key in the arguments, or null. Such
 *   arguments are refused: in an object literal `"__proto__": …` sets the prototype instead of a
 *   key, so the script would not say what the call sends.
 * - toolArgumentsSchema: the `arguments` of call_tool and run_skill, a JSON object with no
 *   `__proto__` key at any depth, looked for before zod copies the object (the copy would turn a
 *   top-level one into its prototype, and so hide it).
 */
import { z } from "zod";
import { canonicalJson } from "@/lib/canonical-json";

export type DirectCall = { server: string; tool: string; arguments: Record<string, unknown> };

export function directCallScript(server: string, tool: string, args: Record<string, unknown>): string {
  return `return await tools[${JSON.stringify(server)}][${JSON.stringify(tool)}](${canonicalJson(args)});`;
}

const SHAPE = /^return await tools\[("(?:[^"\\]|\\.)*")\]\[("(?:[^"\\]|\\.)*")\]\(([\s\S]*)\);$/;

export function parseDirectCall(code: string): DirectCall | null {
  const match = SHAPE.exec(code);
  if (!match) return null;
  try {
    const server: unknown = JSON.parse(match[1]!);
    const tool: unknown = JSON.parse(match[2]!);
    const args: unknown = JSON.parse(match[3]!);
    if (typeof server !== "string" || typeof tool !== "string" || !args || typeof args !== "object" || Array.isArray(args)) return null;
    const call = { server, tool, arguments: args as Record<string, unknown> };
    return directCallScript(server, tool, call.arguments) === code && protoKeyPath(call.arguments) === null ? call : null;
  } catch {
    return null;
  }
}

export function protoKeyPath(value: unknown, path = "arguments"): string | null {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = protoKeyPath(item, `${path}[${index}]`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key === "__proto__") return `${path}.__proto__`;
      const found = protoKeyPath(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

export const toolArgumentsSchema = z.preprocess((value, ctx) => {
  const proto = protoKeyPath(value);
  // The issue's path is the key's, below `arguments`: "filter", "__proto__" → arguments.filter.__proto__.
  if (proto)
    ctx.addIssue({ code: "custom", path: proto.split(".").slice(1), message: "a __proto__ key cannot be sent (it would set the prototype, not a key)" });
  return value;
}, z.record(z.string(), z.unknown()).default({}));
