/**
 * Turning a submitted script (the body of an async function) into the module the sandbox imports.
 *
 * Decisions: static `import` declarations are allowed only at the top of the script (before any
 * other statement; comments and blank lines may precede them) and are hoisted to module scope;
 * anything else is left in the body, where Node reports an import statement as a syntax error.
 * Every line keeps its number, so stack traces point at the agent's own lines. TypeScript is
 * stripped with Node's `module.stripTypeScriptTypes` (no type-check here: intake does that).
 * Refuses: static imports of anything but the allowed packages and ALLOWED_BUILTINS (checked here,
 * before a sandbox is spent); dynamic imports are gated again inside the child.
 */
import { stripTypeScriptTypes } from "node:module";
import type { ScriptLanguage } from "./types";
import { bareSpecifier, packageName } from "@/lib/contracts/packages";

/** Builtins a script may import: pure computation plus fs for ./out/ (bounded by the permission model). */
export const ALLOWED_BUILTINS = [
  "assert",
  "buffer",
  "crypto",
  "events",
  "fs",
  "fs/promises",
  "path",
  "stream",
  "stream/promises",
  "string_decoder",
  "timers/promises",
  "url",
  "util",
  "zlib",
] as const;

const LEADING = /^(?:\s+|\/\/[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)/;
const IMPORT = /^import\s+(type\s+)?(?:[\w$*{}\s,]+?\s+from\s*)?(["'])([^"'\n]+)\2\s*(?:with\s*\{[^}]*\}\s*)?;?/;

/** The module to stage; `prefixColumns`: what the wrapper puts before the script's first line (stack positions on line 1 are that much further right). */
export type PreparedScript = { module: string; imports: string[]; prefixColumns: number };

export class ScriptRejected extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ScriptRejected";
  }
}

export function prepareScript(code: string, language: ScriptLanguage, allowedPackages: readonly string[]): PreparedScript {
  let rest = code;
  let consumed = "";
  const hoisted: string[] = [];
  const imports: string[] = [];
  for (;;) {
    const lead = LEADING.exec(rest);
    if (lead) {
      consumed += lead[0];
      rest = rest.slice(lead[0].length);
      continue;
    }
    const imp = IMPORT.exec(rest);
    if (!imp) break;
    hoisted.push(imp[0].replace(/\n/g, " ").trimEnd().replace(/;?$/, ";"));
    if (!imp[1]) imports.push(imp[3]!);
    consumed += imp[0].replace(/[^\n]/g, " ");
    rest = rest.slice(imp[0].length);
  }
  for (const specifier of imports) {
    const bare = bareSpecifier(specifier);
    const ok = bare !== undefined && ((ALLOWED_BUILTINS as readonly string[]).includes(bare) || allowedPackages.includes(packageName(bare)));
    if (!ok) throw new ScriptRejected(`import of '${specifier.slice(0, 200)}' is not on the package allowlist`);
  }
  const body = consumed.replace(/[^\n]/g, " ") + rest;
  const prefix = `${hoisted.join(" ")} export default async function airlockScript(tools, inputs, checks) {`;
  const wrapped = `${prefix}${body}\n}\n`;
  if (language === "javascript") return { module: wrapped, imports, prefixColumns: prefix.length };
  try {
    // Stripping keeps every position (types become spaces), so the prefix's columns stay as they are.
    return { module: stripTypeScriptTypes(wrapped, { mode: "strip" }), imports, prefixColumns: prefix.length };
  } catch (error) {
    throw new ScriptRejected(`TypeScript could not be stripped: ${(error as Error).message}`);
  }
}
