/**
 * One JSON Schema validation for tool arguments and results, used by the broker before every
 * call and by analysis before anyone reviews (lib/intake/arguments.ts), so that what analysis
 * reports is what the broker would refuse. It is the MCP SDK's own Ajv configuration (strict off,
 * formats validated, every error reported), with only own properties counting as present.
 *
 * Guarantees: `compileToolSchema` never throws — a schema Ajv cannot compile is an Error value the
 * caller reports; equal schemas (by canonical JSON) are compiled once, and at most MAX_COMPILED are
 * kept (Ajv holds every schema object it compiled, so schemas read afresh per call — a skill's
 * input schema, a standing approval's bounds — would otherwise be compiled and kept per call); a
 * check returns the issues (empty when valid) with the JSON Pointer of each, and `issuesText`
 * renders them exactly as the SDK's validator does ("data/x must …");
 * - a schema's `pattern` and `patternProperties` (an upstream's, a skill's, a standing approval's
 *   bounds) are matched against what scripts and agents send, so they run on RE2 (re2js), in time
 *   linear in the text: with JavaScript's backtracking engine, `^(a+)+$` and 31 characters held
 *   the event loop for 33 s. Each keeps its ECMAScript meaning (`ecmaPatternForRe2`); one RE2
 *   cannot run with that meaning (a lookaround, a back-reference, `\S` inside a class) makes the
 *   schema one that cannot be compiled: its tool's calls are refused, naming why.
 */
import { Ajv, type ErrorObject } from "ajv";
import addFormatsPlugin from "ajv-formats";
import { RE2JS } from "re2js";
import { canonicalJson } from "@/lib/canonical-json";
import { sanitizeText } from "@/lib/untrusted/sanitize";

export type SchemaIssue = { path: string; keyword: string; message: string; params: Record<string, unknown> };
export type SchemaCheck = (value: unknown) => SchemaIssue[];

const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;

/** ECMAScript's whitespace (`\s`), as the body of an RE2 character class. */
const ECMA_SPACE = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/**
 * A JSON Schema pattern (ECMAScript syntax, Unicode mode, as Ajv compiles it) written for RE2 with
 * the same meaning: `\s` and `\S` as ECMAScript's whitespace, `.` without line terminators,
 * `\uXXXX`, `\u{X}` and `\cX` as code points, `[` inside a class as itself (RE2 reads `[:alpha:]`
 * there). ECMAScript must accept the pattern first; what cannot be written for RE2 (`\S` inside a
 * class, an empty class, a lookaround, a back-reference) throws, and the schema is refused.
 */
function ecmaPatternForRe2(pattern: string): string {
  new RegExp(pattern, "u");
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[++i]!;
      const tail = pattern.slice(i + 1);
      const codePoint = next === "u" ? (/^\{([0-9A-Fa-f]+)\}/.exec(tail) ?? /^([0-9A-Fa-f]{4})/.exec(tail)) : null;
      if (codePoint) {
        out += `\\x{${codePoint[1]}}`;
        i += codePoint[0].length;
      } else if (next === "c") {
        out += `\\x{${(pattern.charCodeAt(++i) % 32).toString(16)}}`;
      } else if (next === "s") {
        out += inClass ? ECMA_SPACE : `[${ECMA_SPACE}]`;
      } else if (next === "S") {
        if (inClass) throw new Error("\\S inside a character class has no linear-time form");
        out += `[^${ECMA_SPACE}]`;
      } else {
        out += `\\${next}`;
      }
    } else if (inClass) {
      if (c === "]") inClass = false;
      out += c === "[" ? "\\[" : c;
    } else if (c === "[") {
      const negated = pattern[i + 1] === "^";
      if (pattern[i + (negated ? 2 : 1)] === "]") throw new Error("an empty character class has no RE2 form");
      inClass = true;
      out += negated ? "[^" : "[";
      if (negated) i++;
    } else {
      out += c === "." ? "[^\\n\\r\\x{2028}\\x{2029}]" : c;
    }
  }
  return out;
}

/**
 * Ajv's regular-expression engine (its `code.regExp` option), here RE2 on the pattern as
 * `ecmaPatternForRe2` writes it: `test` finds a match anywhere, as RegExp's does. Ajv keeps one
 * compiled pattern per `toString()`, so it names the pattern.
 */
function linearRegExp(pattern: string): { test(text: string): boolean; toString(): string } {
  const compiled = RE2JS.compile(ecmaPatternForRe2(pattern));
  return { test: (text) => compiled.test(text), toString: () => `re2:${pattern}` };
}
// Ajv names the engine in code it generates for standalone use, which Airlock never asks for.
linearRegExp.code = "linearRegExp";

// ownProperties: a key is present only as the value's own (a missing `toString` is missing, not Object.prototype's).
const ajv = addFormats(
  new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: true, ownProperties: true, code: { regExp: linearRegExp } }),
);

function issueOf(error: ErrorObject): SchemaIssue {
  return { path: error.instancePath, keyword: error.keyword, message: error.message ?? "is invalid", params: { ...error.params } };
}

export const MAX_COMPILED = 1_000;
/** Canonical JSON of a schema → the schema object Ajv compiled and its check, least recently used first. */
const compiled = new Map<string, { schema: Record<string, unknown>; check: SchemaCheck | Error }>();

function compile(schema: Record<string, unknown>): SchemaCheck | Error {
  try {
    const validate = ajv.compile(schema);
    return (value) => (validate(value) ? [] : (validate.errors ?? []).map(issueOf));
  } catch (error) {
    return new Error(`the tool's schema cannot be compiled: ${sanitizeText((error as Error).message, 300)}`);
  }
}

export function compileToolSchema(schema: Record<string, unknown>): SchemaCheck | Error {
  let key: string;
  try {
    key = canonicalJson(schema);
  } catch (error) {
    return new Error(`the tool's schema cannot be compiled: ${sanitizeText((error as Error).message, 300)}`);
  }
  const hit = compiled.get(key);
  if (hit) {
    compiled.delete(key);
    compiled.set(key, hit);
    return hit.check;
  }
  const check = compile(schema);
  compiled.set(key, { schema, check });
  if (compiled.size > MAX_COMPILED) {
    const [oldestKey, oldest] = compiled.entries().next().value!;
    compiled.delete(oldestKey);
    ajv.removeSchema(oldest.schema);
  }
  return check;
}

export function issuesText(issues: readonly SchemaIssue[]): string {
  return issues.map((issue) => `data${issue.path} ${issue.message}${allowedValues(issue)}`).join(", ");
}

/** What an enum allows, said with its refusal (`must be equal to one of the allowed values: "open", "paid"`), at most 20 of them. */
function allowedValues(issue: SchemaIssue): string {
  const allowed = issue.keyword === "enum" ? issue.params.allowedValues : undefined;
  if (!Array.isArray(allowed)) return "";
  const shown = allowed.slice(0, 20).map((value) => sanitizeText(JSON.stringify(value) ?? "", 80));
  return `: ${shown.join(", ")}${allowed.length > 20 ? ", …" : ""}`;
}
