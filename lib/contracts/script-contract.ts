/**
 * What every script sees besides `tools`: the `inputs` reader, the `checks` it declares about its
 * result (decided by the host, lib/sandbox/checks.ts) and `console`, plus the few globals
 * the sandbox provides, as TypeScript declarations. One text, used by the type-checker
 * (lib/intake/typecheck.ts) and shown to agents by search_tools; the sandbox's
 * bootstrap (lib/sandbox/child/bootstrap.mjs) implements exactly these `inputs` methods (a test
 * holds it to SCRIPT_INPUT_METHODS). Inputs are synchronous inside the sandbox.
 *
 * Agents are shown `inputs` and `checks` on request (searchScriptGlobals): a search that names
 * neither gets one line saying they exist and how to ask, not their 400 tokens.
 */

export const SCRIPT_INPUT_METHODS = ["list", "text", "bytes", "json", "csv"] as const;

/** The checks a script may declare; the host decides each (lib/sandbox/checks.ts). */
export const CHECK_KINDS = ["equal", "rowCount", "sum", "range", "sameUnit"] as const;
export type CheckKind = (typeof CHECK_KINDS)[number];

export const CONSOLE_METHODS = ["log", "info", "warn", "error", "debug", "trace", "dir", "table"] as const;

// Agents read these two in every search_tools answer at detail "full": every comment is paid for.
export const SCRIPT_INPUTS_DECLARATION = [
  "/** Files staged for this run; csv rows are keyed by the header line. */",
  "interface AirlockInputs {",
  "  list(): { name: string; size: number }[];",
  "  text(name: string): string;",
  "  bytes(name: string): Uint8Array;",
  "  json(name: string): any;",
  "  csv(name: string): Record<string, string>[];",
  "}",
  "declare const inputs: AirlockInputs;",
].join("\n");

export const SCRIPT_CHECKS_DECLARATION = [
  "type AirlockCheckVerdict = Promise<{ readonly ok: boolean; readonly message: string }>;",
  "/** Decided by Airlock's host: a failed check ends the run check_failed and withholds the result until a reviewer releases it. */",
  "interface AirlockChecks {",
  "  /** Same JSON value, keys in any order. */",
  "  equal(label: string, actual: unknown, expected: unknown): AirlockCheckVerdict;",
  "  rowCount(label: string, rows: readonly unknown[], bounds: { min?: number; max?: number }): AirlockCheckVerdict;",
  "  /** The rows' numeric field (dotted path) sums to expected ± tolerance (default 0). */",
  "  sum(label: string, rows: readonly unknown[], field: string, expected: number, options?: { tolerance?: number }): AirlockCheckVerdict;",
  "  /** Numbers, or ISO 8601 dates compared as instants. */",
  "  range(label: string, values: readonly (number | string)[], bounds: { min?: number | string; max?: number | string }): AirlockCheckVerdict;",
  "  /** Every row's field holds one value (a currency); fails on no rows. */",
  "  sameUnit(label: string, rows: readonly unknown[], field: string): AirlockCheckVerdict;",
  "  /** An assumption the result rests on, shown to the agent and reviewers. */",
  "  assume(text: string): void;",
  "  /** Partial on purpose: failed calls or error logs do not make it SWALLOWED_FAILURE. */",
  "  allowPartial(reason: string): void;",
  "}",
  "declare const checks: AirlockChecks;",
].join("\n");

/** The globals an agent may ask search_tools for, by name; `gist` is what the line naming them says. */
const SCRIPT_GLOBALS = [
  { name: "inputs", gist: "staged files", summary: "Files staged for this run (list_inputs names them)", declaration: SCRIPT_INPUTS_DECLARATION },
  {
    name: "checks",
    gist: "result checks Airlock decides",
    summary: "Checks of the result, decided by Airlock's host; a failed one withholds the result for review",
    declaration: SCRIPT_CHECKS_DECLARATION,
  },
] as const;

export type ScriptGlobalSummary = { name: string; summary: string };

/**
 * The globals a search_tools query asks for: all without words, else those whose name holds a
 * query word or is held by one ("check", "checks", "inputs:"). At detail full, their declarations,
 * and one line naming the others and how to ask for them.
 */
export function searchScriptGlobals(query: string, detail: "name" | "summary" | "full"): { globals: ScriptGlobalSummary[]; declaration?: string } {
  const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
  const asked = (name: string) => terms.length === 0 || terms.some((term) => name.includes(term) || term.includes(name));
  const found = SCRIPT_GLOBALS.filter((g) => asked(g.name));
  const globals = found.map((g) => ({ name: g.name, summary: detail === "name" ? "" : g.summary }));
  if (detail !== "full") return { globals };
  const others = SCRIPT_GLOBALS.filter((g) => !found.includes(g));
  const named = others.map((g) => `${g.name} (${g.gist})`).join(" and ");
  const ask = `search_tools({ query: "${others.map((g) => g.name).join(" ")}", detail: "full" })`;
  const pointer = others.length === 0 ? [] : [`// Scripts also see ${named}: ${ask} declares ${others.length === 1 ? "it" : "them"}.`];
  return { globals, declaration: [...found.map((g) => g.declaration), ...pointer].join("\n") };
}

/** The whole contract the type-checker loads beside the tool declarations. */
export const SCRIPT_CONTRACT_DECLARATIONS = [
  SCRIPT_INPUTS_DECLARATION,
  SCRIPT_CHECKS_DECLARATION,
  "interface AirlockConsole {",
  ...CONSOLE_METHODS.map((level) => `  ${level}(...data: unknown[]): void;`),
  "}",
  "declare const console: AirlockConsole;",
  "declare function setTimeout(callback: (...args: any[]) => void, ms?: number, ...args: any[]): unknown;",
  "declare function clearTimeout(handle: unknown): void;",
  "declare function structuredClone<T>(value: T): T;",
  // Node's globals a script commonly reaches for, which the sandbox has (a name the declarations lack is a type error for a reviewer).
  "declare const performance: { now(): number; readonly timeOrigin: number };",
  "declare const crypto: { randomUUID(): string; getRandomValues<T extends ArrayBufferView>(array: T): T };",
  "declare function atob(data: string): string;",
  "declare function btoa(data: string): string;",
  "declare function queueMicrotask(callback: () => void): void;",
  "declare class URL { constructor(url: string, base?: string | URL); readonly href: string; readonly origin: string; readonly protocol: string; readonly host: string; readonly hostname: string; readonly pathname: string; readonly search: string; readonly searchParams: URLSearchParams; readonly hash: string; toString(): string; }",
  "declare class URLSearchParams { constructor(init?: string | Record<string, string> | [string, string][]); get(name: string): string | null; getAll(name: string): string[]; has(name: string): boolean; set(name: string, value: string): void; append(name: string, value: string): void; toString(): string; }",
  "declare class TextEncoder { encode(input?: string): Uint8Array; }",
  "declare class TextDecoder { constructor(label?: string); decode(input?: ArrayBufferView | ArrayBuffer): string; }",
].join("\n");
