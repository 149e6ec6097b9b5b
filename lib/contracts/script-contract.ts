/**
 * What every script sees besides `tools`: the `inputs` reader and `console`, plus the few globals
 * the sandbox provides, as TypeScript declarations. One text, used by the type-checker
 * (lib/intake/typecheck.ts) and shown to agents next to the tool declarations; the sandbox's
 * bootstrap (lib/sandbox/child/bootstrap.mjs) implements exactly these `inputs` methods (a test
 * holds it to SCRIPT_INPUT_METHODS). Inputs are synchronous inside the sandbox.
 */

export const SCRIPT_INPUT_METHODS = ["list", "text", "bytes", "json", "csv"] as const;

export const CONSOLE_METHODS = ["log", "info", "warn", "error", "debug", "trace", "dir", "table"] as const;

export const SCRIPT_INPUTS_DECLARATION = [
  "/** Files staged for this run. */",
  "interface AirlockInputs {",
  "  list(): { name: string; size: number }[];",
  "  text(name: string): string;",
  "  bytes(name: string): Uint8Array;",
  "  /** Parsed JSON: its shape is the script's to check. */",
  "  json(name: string): any;",
  "  /** Rows keyed by the header line. */",
  "  csv(name: string): Record<string, string>[];",
  "}",
  "declare const inputs: AirlockInputs;",
].join("\n");

/** The whole contract the type-checker loads beside the tool declarations. */
export const SCRIPT_CONTRACT_DECLARATIONS = [
  SCRIPT_INPUTS_DECLARATION,
  "interface AirlockConsole {",
  ...CONSOLE_METHODS.map((level) => `  ${level}(...data: unknown[]): void;`),
  "}",
  "declare const console: AirlockConsole;",
  "declare function setTimeout(callback: (...args: any[]) => void, ms?: number, ...args: any[]): unknown;",
  "declare function clearTimeout(handle: unknown): void;",
  "declare function structuredClone<T>(value: T): T;",
  "declare class URL { constructor(url: string, base?: string | URL); readonly href: string; readonly origin: string; readonly protocol: string; readonly host: string; readonly hostname: string; readonly pathname: string; readonly search: string; readonly searchParams: URLSearchParams; readonly hash: string; toString(): string; }",
  "declare class URLSearchParams { constructor(init?: string | Record<string, string> | [string, string][]); get(name: string): string | null; getAll(name: string): string[]; has(name: string): boolean; set(name: string, value: string): void; append(name: string, value: string): void; toString(): string; }",
  "declare class TextEncoder { encode(input?: string): Uint8Array; }",
  "declare class TextDecoder { constructor(label?: string); decode(input?: ArrayBufferView | ArrayBuffer): string; }",
].join("\n");
