/**
 * The plan of a run: the ordered writes its preview intercepted, what each was answered with,
 * and the money each moves. Pure functions; lib/runs/preview.ts builds plans, the executor
 * follows them (`PlanFollower`).
 *
 * Placeholders: a value only the real call can know (an id the upstream assigns) is answered in
 * preview with a symbolic string, `@plan:<seq><JSON Pointer>`. At apply, an argument equal to a
 * placeholder matches the value the real call of that planned write returned at that pointer, so
 * `createX` followed by `send(x.id)` applies. Only strings are symbolic; numbers and booleans in
 * an answer built from an outputSchema are fixed (0, false) and a later write that depends on them
 * diverges rather than guess.
 *
 * A plan never holds a placeholder in a write's arguments that no earlier write answered with
 * (`strayPlaceholder`: the preview fails PLAN_UNREVIEWABLE), so a script cannot make one up to
 * stand for a value reviewers never saw.
 *
 * Guarantees of `PlanFollower.check`: a write is allowed only when it is the next planned one —
 * same server, same tool, and the same arguments in canonical JSON once placeholders are replaced
 * by real values; fewer writes than planned are fine, more or others never are.
 */
import Decimal from "decimal.js";
import { canonicalJson } from "@/lib/canonical-json";
import type { MoneyHint, PreviewHints } from "@/lib/contracts/preview-hints";
import type { PlanWrite, RunPlan } from "@/lib/contracts/run-columns";
import { jsonDigest } from "@/lib/digest";
import type { JsonValue } from "@/lib/untrusted/safe-json";

const MAX_DEPTH = 12;
const PLACEHOLDER = /^@plan:(\d+)(\/.*)?$/;

function escapePointer(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The value at a JSON Pointer, or undefined. */
export function atPointer(value: unknown, pointer: string): unknown {
  if (pointer === "") return value;
  let current = value;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function placeholder(seq: number, pointer: string): string {
  return `@plan:${seq}${pointer}`;
}

/** An answer shaped by a JSON Schema: strings symbolic, numbers their minimum or 0, the first enum value. */
function fromSchema(schema: unknown, seq: number, pointer: string, depth: number): JsonValue {
  if (depth > MAX_DEPTH || schema === null || typeof schema !== "object" || Array.isArray(schema)) return placeholder(seq, pointer);
  const s = schema as Record<string, unknown>;
  if ("const" in s) return (s.const ?? null) as JsonValue;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as JsonValue;
  for (const key of ["anyOf", "oneOf"] as const) {
    if (Array.isArray(s[key]) && s[key].length > 0) return fromSchema(s[key][0], seq, pointer, depth + 1);
  }
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "number":
    case "integer":
      return typeof s.minimum === "number" ? s.minimum : 0;
    case "boolean":
      return false;
    case "null":
      return null;
    case "array":
      return [];
    case "object": {
      const out: { [key: string]: JsonValue } = {};
      const properties = s.properties && typeof s.properties === "object" ? (s.properties as Record<string, unknown>) : {};
      for (const [key, sub] of Object.entries(properties)) out[key] = fromSchema(sub, seq, `${pointer}/${escapePointer(key)}`, depth + 1);
      return out;
    }
    default:
      return placeholder(seq, pointer);
  }
}

/** A declared template filled from the arguments: "$args/<pointer>" and "$placeholder" (see the header). */
function fromTemplate(template: unknown, args: JsonValue, seq: number, pointer: string, depth: number): JsonValue {
  if (depth > MAX_DEPTH) return placeholder(seq, pointer);
  if (template === "$placeholder") return placeholder(seq, pointer);
  if (typeof template === "string" && template.startsWith("$args")) {
    const value = atPointer(args, template.slice("$args".length));
    return value === undefined ? placeholder(seq, pointer) : (value as JsonValue);
  }
  if (Array.isArray(template)) return template.map((item, i) => fromTemplate(item, args, seq, `${pointer}/${i}`, depth + 1));
  if (template !== null && typeof template === "object") {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, sub] of Object.entries(template)) out[key] = fromTemplate(sub, args, seq, `${pointer}/${escapePointer(key)}`, depth + 1);
    return out;
  }
  return (template ?? null) as JsonValue;
}

/** What a preview answers for the planned write `seq`. */
export function previewAnswer(seq: number, args: JsonValue, hints: PreviewHints | null, outputSchema: Record<string, unknown> | null): JsonValue {
  if (hints && hints.answer !== undefined) return fromTemplate(hints.answer, args, seq, "", 0);
  return outputSchema ? fromSchema(outputSchema, seq, "", 0) : placeholder(seq, "");
}

/**
 * What the plan says of an amount in minor units whose currency the write does not state: shown as
 * the integer it is, since how many minor units make one (100, 1 for JPY, 1000 for KWD) depends on
 * the currency the upstream will pick. Converting with a guess showed a ¥302,000 refund as 3,020.00.
 */
export const MINOR_UNITS_UNSTATED = "minor units (currency not stated)";

/** A whole amount of minor units in the currency's major ones (`code` known). */
function inMajorUnits(amount: number, code: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat("en", { style: "currency", currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    digits = 2;
  }
  return new Decimal(amount).dividedBy(10 ** digits).toFixed(digits);
}

/**
 * The money a planned write moves, where its tool says it is; null when it says nothing, or the
 * amount is not a number the plan can show exactly: not finite or past 2^53, or in minor units and
 * not a whole number of them (0.004 cents would show as 0.00, and any number of them add to 0.00).
 */
export function moneyOf(hint: MoneyHint | null, args: JsonValue, answer: JsonValue): PlanWrite["money"] {
  if (!hint) return null;
  const source = hint.from === "answer" ? answer : args;
  const amount = atPointer(source, hint.amount);
  if (typeof amount !== "number" || !Number.isFinite(amount) || Math.abs(amount) > Number.MAX_SAFE_INTEGER) return null;
  if (hint.unit === "minor" && !Number.isSafeInteger(amount)) return null;
  const currency = hint.currency ? atPointer(source, hint.currency) : undefined;
  const subject = hint.subject ? atPointer(source, hint.subject) : undefined;
  const code = typeof currency === "string" && !PLACEHOLDER.test(currency) ? currency : null;
  const shown =
    hint.unit === "major"
      ? { amount: String(amount), currency: code }
      : code === null
        ? { amount: String(amount), currency: MINOR_UNITS_UNSTATED }
        : { amount: inMajorUnits(amount, code), currency: code };
  return { ...shown, subject: typeof subject === "string" || typeof subject === "number" ? String(subject) : null };
}

/**
 * Why a write's money cannot be shown in its plan, or null: its tool says where the amount is (in
 * its arguments or its preview answer) and it is not a number there (a placeholder for what an
 * earlier write will answer, or nothing). Such a write is left out of the plan's totals and its
 * amount is chosen by the upstream after approval, so it is not planned (PLAN_UNREVIEWABLE).
 */
export function unshownMoney(hint: MoneyHint | null, money: PlanWrite["money"], args: JsonValue, answer: JsonValue): string | null {
  if (!hint || money !== null) return null;
  const amount = atPointer(hint.from === "answer" ? answer : args, hint.amount);
  const shown = amount === undefined ? "nothing" : JSON.stringify(amount).slice(0, 200);
  const where = hint.from === "answer" ? `its answer's ${hint.amount}` : `argument ${hint.amount}`;
  if (typeof amount === "number") {
    const rule = hint.unit === "minor" ? "a whole number of minor units" : "a number the plan can show exactly";
    return `the amount it moves (${where}) is ${shown}, not ${rule}, so no reviewer could see how much money it moves.`;
  }
  return `the amount it moves (${where}) is ${shown}, not a number, so no reviewer could see how much money it moves. Pass the amount itself: a value read before the write, not one an earlier write will return.`;
}

/** The JSON Pointers (as a schema check names places) of the placeholders a value holds, at any depth. */
export function placeholderPointers(value: unknown, at = ""): string[] {
  if (typeof value === "string") return PLACEHOLDER.test(value) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => placeholderPointers(item, `${at}/${i}`));
  if (value !== null && typeof value === "object")
    return Object.entries(value).flatMap(([key, item]) => placeholderPointers(item, `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`));
  return [];
}

/**
 * The placeholders a value holds (whole strings), at any depth, as `resolve` replaces them at any
 * depth (values reach here bounded: the sandbox's RPC refuses arguments nested past 32 levels).
 */
function placeholdersIn(value: unknown, into: Set<string>): Set<string> {
  if (typeof value === "string" && PLACEHOLDER.test(value)) into.add(value);
  else if (Array.isArray(value)) for (const item of value) placeholdersIn(item, into);
  else if (value !== null && typeof value === "object") for (const item of Object.values(value)) placeholdersIn(item, into);
  return into;
}

/**
 * A placeholder in a write's arguments that no earlier planned write answered with, or null: a
 * string the script made up (`"@plan:1/refund/amountMinor"`) to stand, at apply, for whatever the
 * real call returns there, which reviewers could not see. Only values an upstream assigns are
 * symbolic in an answer; nothing else may be.
 */
export function strayPlaceholder(args: JsonValue, earlier: readonly Pick<PlanWrite, "answer">[]): string | null {
  const answered = new Set<string>();
  for (const write of earlier) placeholdersIn(write.answer, answered);
  for (const used of placeholdersIn(args, new Set())) if (!answered.has(used)) return used;
  return null;
}

/** The digest an approval binds: the ordered writes (server, tool, canonical arguments). */
export function planDigest(writes: readonly Pick<PlanWrite, "seq" | "server" | "tool" | "arguments">[]): string {
  return jsonDigest(writes.map(({ seq, server, tool, arguments: args }) => ({ seq, server, tool, arguments: args })));
}

/**
 * Why two previews of one script planned different writes, or null when they planned the same:
 * the first write that differs, and where. Such a run could never make the writes reviewers
 * approve (the apply stops at the first that differs, PLAN_DIVERGED).
 */
export function unstablePlan(first: readonly PlanWrite[], second: readonly PlanWrite[]): string | null {
  if (planDigest(first) === planDigest(second)) return null;
  const differing = first.findIndex((write, i) => second[i] === undefined || planDigest([write]) !== planDigest([second[i]!]));
  // None of the first's differs: the second planned more.
  const at = differing < 0 ? first.length : differing;
  const [a, b] = [first[at], second[at]];
  let what: string;
  if (!a || !b) what = `the first planned ${first.length} write(s), the second ${second.length}`;
  else if (a.server !== b.server || a.tool !== b.tool) what = `write ${at + 1} was ${a.server}.${a.tool} in one and ${b.server}.${b.tool} in the other`;
  else if (a.seq !== b.seq) what = `write ${at + 1} (${a.server}.${a.tool}) came after a different number of calls`;
  else {
    const difference = firstDifference(a.arguments, b.arguments, "");
    const shown = (value: JsonValue | undefined) => (value === undefined ? "nothing" : JSON.stringify(value).slice(0, 80));
    what = `write ${at + 1} (${a.server}.${a.tool}) has ${shown(difference.a)} at ${difference.path || "its arguments"} in one and ${shown(difference.b)} in the other`;
  }
  return (
    `PLAN_UNSTABLE: two previews of the same script planned different writes (${what}). Its writes depend on the time, on randomness ` +
    "or on data that changed between the two, so the run could never make the writes reviewers approve. Make each write's arguments " +
    "depend only on what the script reads, e.g. an idempotencyKey built from the invoice id rather than Date.now() or Math.random()."
  );
}

/** The first place (a JSON pointer) where two JSON values differ, and their values there. */
function firstDifference(a: JsonValue | undefined, b: JsonValue | undefined, path: string): { path: string; a?: JsonValue; b?: JsonValue } {
  const isObject = (v: JsonValue | undefined): v is Record<string, JsonValue> => v !== null && typeof v === "object" && !Array.isArray(v);
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (canonicalJson(a[key] ?? null) === canonicalJson(b[key] ?? null) && Object.hasOwn(a, key) === Object.hasOwn(b, key)) continue;
      return firstDifference(Object.hasOwn(a, key) ? a[key] : undefined, Object.hasOwn(b, key) ? b[key] : undefined, `${path}/${key}`);
    }
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    const i = a.findIndex((item, k) => canonicalJson(item) !== canonicalJson(b[k]!));
    if (i >= 0) return firstDifference(a[i], b[i], `${path}/${i}`);
  }
  return { path, a, b };
}

/**
 * Totals per currency, as reviewers see them: "3 refunds, 30.00 EUR, invoices inv_0001, …". A
 * total adds each amount's size, and says how many were negative.
 */
export function moneyTotals(plan: RunPlan): { currency: string | null; total: string; count: number; negative: number; subjects: string[] }[] {
  const groups = new Map<string | null, { total: Decimal; count: number; negative: number; subjects: string[] }>();
  for (const write of plan.writes) {
    if (!write.money) continue;
    const group = groups.get(write.money.currency) ?? { total: new Decimal(0), count: 0, negative: 0, subjects: [] };
    // Every amount counts by its size: netting -2,999.99 against 3,000.00 would show 0.01 moving.
    const amount = new Decimal(write.money.amount);
    group.total = group.total.plus(amount.abs());
    if (amount.isNegative() && !amount.isZero()) group.negative++;
    group.count++;
    if (write.money.subject && !group.subjects.includes(write.money.subject)) group.subjects.push(write.money.subject);
    groups.set(write.money.currency, group);
  }
  const places = (amount: string) => amount.split(".")[1]?.length ?? 0;
  return [...groups].map(([currency, g]) => {
    const digits = Math.max(0, ...plan.writes.filter((w) => w.money?.currency === currency).map((w) => places(w.money!.amount)));
    return { currency, total: g.total.toFixed(digits), count: g.count, negative: g.negative, subjects: g.subjects };
  });
}

/** Replaces every placeholder whose write has been made by the real value it returned. */
function resolve(value: JsonValue, results: ReadonlyMap<number, JsonValue>): JsonValue {
  if (typeof value === "string") {
    const match = PLACEHOLDER.exec(value);
    if (!match || !results.has(Number(match[1]))) return value;
    const real = atPointer(results.get(Number(match[1])), match[2] ?? "");
    return real === undefined ? value : (real as JsonValue);
  }
  if (Array.isArray(value)) return value.map((item) => resolve(item, results));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  return value;
}

export type PlanCheck = { ok: true; seq: number } | { ok: false; reason: string };

/** Holds an apply to its approved plan, write by write. */
export class PlanFollower {
  private next = 0;
  private readonly results = new Map<number, JsonValue>();

  constructor(private readonly plan: RunPlan) {}

  check(server: string, tool: string, args: JsonValue): PlanCheck {
    const planned = this.plan.writes[this.next];
    const call = `${server}.${tool}`;
    if (!planned) return { ok: false, reason: `${call} would be write ${this.next + 1}, but the approved plan has ${this.plan.writes.length}` };
    const expected = `${planned.server}.${planned.tool}`;
    if (expected !== call) return { ok: false, reason: `write ${this.next + 1} was planned as ${expected}, not ${call}` };
    const wanted = canonicalJson(resolve(planned.arguments, this.results));
    if (canonicalJson(args) !== wanted)
      return { ok: false, reason: `write ${this.next + 1} (${call}) has arguments ${canonicalJson(args)}; the plan approved ${wanted}` };
    this.next++;
    return { ok: true, seq: planned.seq };
  }

  /** The real result of planned write `seq`, which its placeholders now stand for. */
  made(seq: number, result: JsonValue): void {
    this.results.set(seq, result);
  }
}
