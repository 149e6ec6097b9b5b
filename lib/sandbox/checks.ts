/**
 * Result checks, decided by the host. A script declares what its result must satisfy
 * (`checks.sum("net revenue", rows, "amountMinor", 120_000)`); the sandbox's bootstrap sends each
 * call's label and arguments over the RPC channel, and this module computes the outcome here, in
 * the host: a script can hand over the wrong rows, but it cannot declare a check passed.
 *
 * Kinds (CHECK_KINDS; the declarations agents write against are in lib/contracts/script-contract.ts):
 * - equal(label, actual, expected): the same JSON value (keys in any order);
 * - rowCount(label, rows, { min?, max? }): an array whose length is within the bounds;
 * - sum(label, rows, field, expected, { tolerance? }): every row's `field` (a dotted path) is a
 *   finite number, and their exact decimal sum is within `tolerance` (default 0) of `expected`;
 * - range(label, values, { min?, max? }): every value within the bounds; numbers against numbers,
 *   ISO 8601 dates against ISO 8601 dates (compared as instants);
 * - sameUnit(label, rows, field): every row's `field` holds the same string or number (a currency,
 *   a unit), and the rows are not empty.
 *
 * Guarantees: `evaluateCheck` never throws; arguments of the wrong shape fail the check with a
 * message naming the argument (a check that cannot be computed is a failed check: fail closed).
 * Messages are built by the host from the values. A value is quoted whole when its JSON fits 80
 * characters, else described by its shape ("a string of 120 characters"): never cut, so a message
 * holds no fragment of a value (a fragment of a name or an address would escape its token).
 * For rowCount and sum, `rows` and `rowsKey` (a digest of the rows) say what the check covered, for
 * the lineage warning (rpc-session.ts).
 */
import { Decimal } from "decimal.js";
import { canonicalJson } from "@/lib/canonical-json";
import { CHECK_KINDS, type CheckKind } from "@/lib/contracts/script-contract";
import { jsonDigest } from "@/lib/digest";
import type { JsonValue } from "@/lib/untrusted/safe-json";
import { sanitizeText } from "@/lib/untrusted/sanitize";

export function isCheckKind(value: unknown): value is CheckKind {
  return typeof value === "string" && (CHECK_KINDS as readonly string[]).includes(value);
}

/** One check as the host decided it; kept in the run's envelope and shown to agents and reviewers. */
export type CheckOutcome = { kind: CheckKind; label: string; ok: boolean; message: string; rows?: number; rowsKey?: string };

type Verdict = Omit<CheckOutcome, "kind" | "label">;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function show(value: unknown): string {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  if (text.length <= 80) return sanitizeText(text, 200);
  if (typeof value === "string") return `a string of ${value.length} characters`;
  if (Array.isArray(value)) return `an array of ${value.length} items`;
  return `an object with ${Object.keys(value as object).length} keys`;
}

const isObject = (value: unknown): value is Record<string, JsonValue> => typeof value === "object" && value !== null && !Array.isArray(value);

function fieldOf(row: JsonValue, path: readonly string[]): JsonValue | undefined {
  let value: JsonValue | undefined = row;
  for (const key of path) value = isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
  return value;
}

function fieldPath(field: unknown): string[] | null {
  if (typeof field !== "string" || field.length === 0 || field.length > 200) return null;
  const path = field.split(".");
  return path.every((part) => part.length > 0) ? path : null;
}

/** `{min?, max?}` of numbers, or of ISO dates; null when malformed. */
function bounds(value: unknown, dates: boolean): { min?: number; max?: number } | null {
  if (value === undefined || value === null) return {};
  if (!isObject(value) || Object.keys(value).some((k) => k !== "min" && k !== "max")) return null;
  const out: { min?: number; max?: number } = {};
  for (const key of ["min", "max"] as const) {
    const bound = value[key];
    if (bound === undefined) continue;
    const at = dates ? instant(bound) : typeof bound === "number" && Number.isFinite(bound) ? bound : null;
    if (at === null) return null;
    out[key] = at;
  }
  return out;
}

function instant(value: unknown): number | null {
  if (typeof value !== "string" || !ISO_DATE.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : at;
}

const within = (n: number, b: { min?: number; max?: number }) => (b.min === undefined || n >= b.min) && (b.max === undefined || n <= b.max);
const describeBounds = (b: { min?: unknown; max?: unknown }) =>
  b.min !== undefined && b.max !== undefined
    ? `between ${show(b.min)} and ${show(b.max)}`
    : b.min !== undefined
      ? `at least ${show(b.min)}`
      : `at most ${show(b.max)}`;

function rowCount(rows: JsonValue | undefined, options: JsonValue | undefined): Verdict {
  if (!Array.isArray(rows)) return { ok: false, message: `rows must be an array, got ${show(rows)}` };
  const b = bounds(options, false);
  if (!b || (b.min === undefined && b.max === undefined)) return { ok: false, message: "the third argument must be { min?, max? } with at least one number" };
  const ok = within(rows.length, b);
  return { ok, message: `${rows.length} rows, expected ${describeBounds(options as object)}`, rows: rows.length, rowsKey: jsonDigest(rows) };
}

function sum(rows: JsonValue | undefined, field: JsonValue | undefined, expected: JsonValue | undefined, options: JsonValue | undefined): Verdict {
  if (!Array.isArray(rows)) return { ok: false, message: `rows must be an array, got ${show(rows)}` };
  const path = fieldPath(field);
  if (!path) return { ok: false, message: `field must be a property name or dotted path, got ${show(field)}` };
  if (typeof expected !== "number" || !Number.isFinite(expected)) return { ok: false, message: `expected must be a finite number, got ${show(expected)}` };
  if (options !== undefined && options !== null && (!isObject(options) || Object.keys(options).some((k) => k !== "tolerance"))) {
    return { ok: false, message: "the fifth argument must be { tolerance? }" };
  }
  const tolerance = isObject(options) ? (options.tolerance ?? 0) : 0;
  if (typeof tolerance !== "number" || !Number.isFinite(tolerance) || tolerance < 0)
    return { ok: false, message: `tolerance must be a number ≥ 0, got ${show(tolerance)}` };
  let total = new Decimal(0);
  for (const [index, row] of rows.entries()) {
    const value = fieldOf(row, path);
    if (typeof value !== "number" || !Number.isFinite(value)) {
      return { ok: false, message: `row ${index} has no number at ${field}: ${show(value)}`, rows: rows.length, rowsKey: jsonDigest(rows) };
    }
    total = total.plus(value);
  }
  const off = total.minus(expected).abs();
  const ok = off.lte(tolerance);
  const message = `the sum of ${field} over ${rows.length} rows is ${total.toString()}, expected ${expected}${tolerance ? ` ± ${tolerance}` : ""}${ok ? "" : ` (off by ${off.toString()})`}`;
  return { ok, message, rows: rows.length, rowsKey: jsonDigest(rows) };
}

function range(values: JsonValue | undefined, options: JsonValue | undefined): Verdict {
  if (!Array.isArray(values)) return { ok: false, message: `values must be an array, got ${show(values)}` };
  const dates = isObject(options) && (typeof options.min === "string" || typeof options.max === "string");
  const b = bounds(options, dates);
  if (!b || (b.min === undefined && b.max === undefined)) {
    return { ok: false, message: "the third argument must be { min?, max? } with at least one bound: numbers, or ISO 8601 dates" };
  }
  for (const [index, value] of values.entries()) {
    const n = dates ? instant(value) : typeof value === "number" && Number.isFinite(value) ? value : null;
    if (n === null) return { ok: false, message: `value ${index} is not ${dates ? "an ISO 8601 date" : "a finite number"}: ${show(value)}` };
    if (!within(n, b)) return { ok: false, message: `value ${index} is ${show(value)}, outside ${describeBounds(options as object)}` };
  }
  return { ok: true, message: `${values.length} values ${describeBounds(options as object)}` };
}

function sameUnit(rows: JsonValue | undefined, field: JsonValue | undefined): Verdict {
  if (!Array.isArray(rows)) return { ok: false, message: `rows must be an array, got ${show(rows)}` };
  const path = fieldPath(field);
  if (!path) return { ok: false, message: `field must be a property name or dotted path, got ${show(field)}` };
  if (rows.length === 0) return { ok: false, message: "no rows: nothing shows which unit they are in" };
  const counts = new Map<string, number>();
  for (const [index, row] of rows.entries()) {
    const value = fieldOf(row, path);
    if (typeof value !== "string" && typeof value !== "number") return { ok: false, message: `row ${index} has no unit at ${field}: ${show(value)}` };
    const key = JSON.stringify(value);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  if (counts.size === 1) return { ok: true, message: `all ${rows.length} rows in ${[...counts.keys()][0]}` };
  const seen = [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([unit, n]) => `${sanitizeText(unit.slice(0, 40), 60)} (${n})`);
  return { ok: false, message: `${counts.size} different values of ${field}: ${seen.join(", ")}` };
}

/** The host's verdict on one check; `args` are the arguments after the label, as the script passed them. */
export function evaluateCheck(kind: CheckKind, label: string, args: readonly JsonValue[]): CheckOutcome {
  let verdict: Verdict;
  try {
    switch (kind) {
      case "equal": {
        const [actual, expected] = args;
        const ok = args.length >= 2 && canonicalJson(actual) === canonicalJson(expected);
        verdict = { ok, message: ok ? `equal to ${show(expected)}` : `${show(actual)}, expected ${show(expected)}` };
        break;
      }
      case "rowCount":
        verdict = rowCount(args[0], args[1]);
        break;
      case "sum":
        verdict = sum(args[0], args[1], args[2], args[3]);
        break;
      case "range":
        verdict = range(args[0], args[1]);
        break;
      case "sameUnit":
        verdict = sameUnit(args[0], args[1]);
        break;
    }
  } catch (error) {
    verdict = { ok: false, message: `could not be computed: ${sanitizeText(error instanceof Error ? error.message : String(error), 200)}` };
  }
  return { kind, label, ...verdict };
}
