/**
 * Personal data kept out of what the model sees: values reach the agent as stable tokens
 * (`<EMAIL_1>`, `<NAME_3>`), and a later script of the same conversation can pass a token back to
 * a tool classed pii, which gets the real value — so "email the customers whose invoices are
 * overdue" works without the model ever reading an address.
 *
 * What is personal data: values at the fields the config marks in a tool's results and arguments
 * (`piiFields`, lib/broker/config.ts; the only source of NAME), and what lib/untrusted/pii.ts
 * detects in any text (EMAIL, PHONE, IBAN, CARD).
 *
 * Guarantees:
 * - a token is stable within its scope — the agent's conversation (`<agentId>/<conversationId>`),
 *   or the agent when no conversation is named — and means nothing outside it;
 * - the mapping stays in the host, in "PiiToken" (looked up by sha256 of the value, never by the
 *   value); tokens are assigned under a per-scope advisory lock in the caller's transaction, and
 *   the run records which ones its agent-facing content uses ("PiiTokenUse", one row per run);
 * - `tokenized` replaces every occurrence of a run's values with their tokens in any JSON value,
 *   object keys included, wherever a value is not glued to a letter or digit (a name inside a
 *   sentence, an address inside quotes);
 * - `restoreTokens` swaps tokens of the scope for their values only at the argument fields a pii
 *   tool's piiFields mark, and only tokens of the field's kind; a token the scope does not know, or
 *   whose value retention deleted, is refused; token text elsewhere stays text;
 * - a value retention deleted that a run shows again is kept again, so its token keeps hiding it;
 * - scanning is linear in the text: values are matched through an index of their first run of
 *   letters and digits.
 */
import { createHash } from "node:crypto";
import type { PiiTokenKind } from "@/lib/contracts/data-classes";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { findPii, loadPiiDetector } from "@/lib/untrusted/pii";
import type { JsonValue } from "@/lib/untrusted/safe-json";

export const TOKEN_PATTERN = /<(EMAIL|NAME|PHONE|IBAN|CARD)_([1-9]\d{0,8})>/g;

export type PiiValue = { kind: PiiTokenKind; value: string };
export type TokenValue = { token: string; value: string };

export function tokenScope(run: { agentId: string; provenance: unknown }): string {
  const conversation = (run.provenance as { conversationId?: unknown } | null)?.conversationId;
  return `${run.agentId}/${typeof conversation === "string" ? conversation : ""}`;
}

const digest = (value: string) => createHash("sha256").update(value).digest("hex");
/** A run of letters and digits: where a value can start matching (whatever punctuation precedes it). */
const ALNUM_RUN = /[\p{L}\p{N}]+/gu;
const isWordChar = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** Every string of a JSON value, object keys included, depth-first. */
function* strings(value: unknown): Generator<string> {
  if (typeof value === "string") yield value;
  else if (Array.isArray(value)) for (const item of value) yield* strings(item);
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      yield key;
      yield* strings(item);
    }
  }
}

/** `value` with `fn` applied to every string, object keys included. */
function mapStrings<T>(value: T, fn: (text: string) => string): T {
  if (typeof value === "string") return fn(value) as T;
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, fn)) as T;
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = Object.create(null);
    for (const [key, item] of Object.entries(value)) out[fn(key)] = mapStrings(item, fn);
    return out as T;
  }
  return value;
}

/** The values at `path` (`customers[].email`) of a tool's result or arguments, trimmed. */
function valuesAt(value: unknown, path: string): string[] {
  let current: unknown[] = [value];
  for (const segment of path.split(".")) {
    const many = segment.endsWith("[]");
    const key = many ? segment.slice(0, -2) : segment;
    const next: unknown[] = [];
    for (const item of current) {
      if (item === null || typeof item !== "object" || Array.isArray(item) || !Object.hasOwn(item, key)) continue;
      const child = (item as Record<string, unknown>)[key];
      if (many && Array.isArray(child)) next.push(...child);
      else if (!many) next.push(child);
    }
    current = next;
  }
  return current.flatMap((v) => (typeof v === "string" && v.trim().length >= 2 ? [v.trim()] : []));
}

/**
 * Finds known values inside texts in one linear pass per text: each value is indexed by its first
 * run of letters and digits, grouped with the values that have the same run at the same offset and
 * the same length, and a text is walked run by run, with one lookup per group there (many values
 * share a first run: every "+1 …" phone number starts with "1", so trying them one by one was
 * quadratic, 5 s for 20,000 numbers in a megabyte). A value matches where it is not glued to a
 * letter or digit on either side, whatever punctuation surrounds it (quotes, a `+`, a hyphen).
 */
class ValueIndex<T extends { value: string }> {
  private readonly byFirstRun = new Map<string, { offset: number; length: number; values: Map<string, T> }[]>();

  constructor(items: Iterable<T>) {
    for (const item of items) {
      const first = /[\p{L}\p{N}]+/u.exec(item.value);
      if (!first) continue;
      const groups = this.byFirstRun.get(first[0]) ?? [];
      let group = groups.find((g) => g.offset === first.index && g.length === item.value.length);
      if (!group) groups.push((group = { offset: first.index, length: item.value.length, values: new Map() }));
      if (!group.values.has(item.value)) group.values.set(item.value, item);
      this.byFirstRun.set(first[0], groups);
    }
    for (const groups of this.byFirstRun.values()) groups.sort((a, b) => b.length - a.length);
  }

  /** Non-overlapping occurrences in `text`, left to right, longest first at each place. */
  *find(text: string): Generator<{ item: T; start: number; end: number }> {
    if (this.byFirstRun.size === 0) return;
    let from = 0;
    for (const run of text.matchAll(ALNUM_RUN)) {
      const groups = this.byFirstRun.get(run[0]);
      if (!groups) continue;
      let hit: { item: T; start: number; end: number } | undefined;
      for (const { offset, length, values } of groups) {
        const start = run.index - offset;
        const end = start + length;
        if (start < from || start < 0) continue;
        const item = values.get(text.slice(start, end));
        if (!item) continue;
        // Not glued to a letter or digit where the value itself begins or ends with one ("+44…" may follow a word).
        const gluedBefore = isWordChar(item.value[0]) && isWordChar(text[start - 1]);
        const gluedAfter = isWordChar(item.value[length - 1]) && isWordChar(text[end]);
        if (gluedBefore || gluedAfter) continue;
        hit = { item, start, end };
        break;
      }
      if (!hit) continue;
      yield hit;
      from = hit.end;
    }
  }
}

/** Values a run saw at marked fields of its tools' results and arguments (config piiFields). */
export class MarkedValues {
  private readonly values = new Map<string, PiiTokenKind>();

  note(fields: Readonly<Record<string, PiiTokenKind>> | undefined, value: unknown): void {
    for (const [path, kind] of Object.entries(fields ?? {})) for (const found of valuesAt(value, path)) this.values.set(found, kind);
  }

  list(): PiiValue[] {
    return [...this.values].map(([value, kind]) => ({ kind, value }));
  }
}

/** The personal data in the strings of `values`: marked values, and what the detector finds. */
export async function personalData(values: readonly unknown[], marked: MarkedValues): Promise<PiiValue[]> {
  await loadPiiDetector();
  const list = marked.list();
  const whole = new Map(list.map((item) => [item.value, item]));
  const index = new ValueIndex(list);
  const found = new Map<string, PiiValue>();
  const add = (kind: PiiTokenKind, value: string) => found.set(`${kind}\u0000${value}`, { kind, value });
  for (const value of values) {
    for (const text of strings(value)) {
      // Most personal data is a whole field: one lookup, no scan.
      const exact = whole.get(text);
      if (exact) {
        add(exact.kind, exact.value);
        continue;
      }
      for (const { item } of index.find(text)) add(item.kind, item.value);
      for (const match of findPii(text)) add(match.kind, match.value);
    }
  }
  return [...found.values()];
}

/**
 * Whether `values` hold personal data: a value at a field the tools' piiFields mark (`marked`), or
 * one the detector finds, also in compatibility forms (full-width `＠`, digits). One scan of each value's JSON text (what the hold on unreviewed scripts
 * asks, ./executor.ts), not a lookup per string as tokenizing needs.
 */
export async function holdsPersonalData(values: readonly unknown[], marked: MarkedValues): Promise<boolean> {
  if (marked.list().length > 0) return true;
  await loadPiiDetector();
  return values.some((value) => {
    const text = JSON.stringify(value) ?? "";
    // Full-width and other compatibility forms (`dave＠example.com`) read as what they look like.
    const folded = text.normalize("NFKC");
    return findPii(text).length > 0 || (folded !== text && findPii(folded).length > 0);
  });
}

/**
 * Gives every value its token in `scope` (new ones numbered after the scope's last) and records
 * that run `runId` uses them. In the caller's transaction, under the scope's lock, in one
 * statement; `lastUsedAt` (what retention counts from) is moved at most once an hour.
 */
export async function assignTokens(tx: Tx, scope: string, runId: string, values: readonly PiiValue[]): Promise<void> {
  const unique = new Map<string, PiiValue>();
  for (const item of values) unique.set(`${item.kind}\u0000${item.value}`, item);
  if (unique.size === 0) return;
  const input = [...unique.values()];
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`airlock.pii:${scope}`}, 0))`;
  await tx.$executeRaw`
    WITH input AS (
      SELECT * FROM unnest(${input.map((v) => v.kind)}::text[], ${input.map((v) => digest(v.value))}::text[], ${input.map((v) => v.value)}::text[]) AS i(kind, digest, value)
    ),
    matched AS (
      SELECT i.kind, i.value, i.digest, t.id, t."lastUsedAt", t.value AS kept
      FROM input i LEFT JOIN "PiiToken" t ON t.scope = ${scope} AND t.kind = i.kind AND t."valueDigest" = i.digest
    ),
    last AS (SELECT kind, max(n) AS n FROM "PiiToken" WHERE scope = ${scope} GROUP BY kind),
    inserted AS (
      INSERT INTO "PiiToken" (scope, kind, n, "valueDigest", value)
      SELECT ${scope}, m.kind, coalesce(l.n, 0) + row_number() OVER (PARTITION BY m.kind ORDER BY m.digest), m.digest, m.value
      FROM matched m LEFT JOIN last l ON l.kind = m.kind
      WHERE m.id IS NULL
      RETURNING id
    ),
    touched AS (
      -- A value retention deleted is in use again: it is kept again, so the token keeps hiding it.
      UPDATE "PiiToken" t SET "lastUsedAt" = now(), value = coalesce(t.value, m.value), "purgedAt" = NULL
      FROM matched m
      WHERE t.id = m.id AND (m."lastUsedAt" < now() - interval '1 hour' OR m.kept IS NULL)
    )
    INSERT INTO "PiiTokenUse" ("runId", "tokenIds")
    SELECT ${runId}::uuid, array_agg(id ORDER BY id)
    FROM (SELECT id FROM matched WHERE id IS NOT NULL UNION ALL SELECT id FROM inserted) AS used
    ON CONFLICT ("runId") DO UPDATE SET "tokenIds" = ARRAY(
      SELECT DISTINCT id FROM unnest("PiiTokenUse"."tokenIds" || EXCLUDED."tokenIds") AS id ORDER BY id)`;
}

/** The tokens a run's agent-facing content uses, with their values (those retention deleted left out). */
export async function runTokens(db: Db, runId: string): Promise<TokenValue[]> {
  const rows = await db.$queryRaw<{ kind: string; n: number; value: string }[]>`
    SELECT t.kind, t.n, t.value FROM "PiiTokenUse" u CROSS JOIN LATERAL unnest(u."tokenIds") AS used(id)
    JOIN "PiiToken" t ON t.id = used.id
    WHERE u."runId" = ${runId}::uuid AND t.value IS NOT NULL`;
  return rows.map((r) => ({ token: `<${r.kind}_${r.n}>`, value: r.value }));
}

/** How many tokens a run's agent-facing content uses: the values its agent saw only as tokens. */
export async function countRunTokens(db: Db, runId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT cardinality("tokenIds")::int AS n FROM "PiiTokenUse" WHERE "runId" = ${runId}::uuid`;
  return row?.n ?? 0;
}

/** `value` with every occurrence of the tokens' values replaced by their tokens. */
export function tokenized<T>(value: T, tokens: readonly TokenValue[]): T {
  if (tokens.length === 0) return value;
  const whole = new Map(tokens.map((t) => [t.value, t.token]));
  const index = new ValueIndex(tokens);
  return mapStrings(value, (text) => {
    const exact = whole.get(text);
    if (exact !== undefined) return exact;
    let out = "";
    let at = 0;
    for (const { item, start, end } of index.find(text)) {
      out += text.slice(at, start) + item.token;
      at = end;
    }
    return at === 0 ? text : out + text.slice(at);
  });
}

/** The tokens (`<EMAIL_1>`) written in a JSON value's strings. */
export function tokensIn(value: unknown): string[] {
  const found = new Set<string>();
  for (const text of strings(value)) for (const match of text.matchAll(TOKEN_PATTERN)) found.add(match[0]);
  return [...found];
}

/** The values of `tokens` in `scope`; a token it does not know, or whose value was deleted, is missing. */
async function lookup(db: Db, scope: string, tokens: readonly string[]): Promise<{ values: Map<string, string>; missing: string[] }> {
  const wanted = tokens.map((token) => {
    const [, kind, n] = /^<([A-Z]+)_(\d+)>$/.exec(token)!;
    return { token, kind: kind!, n: Number(n) };
  });
  const rows = await db.piiToken.findMany({
    where: { scope, OR: wanted.map(({ kind, n }) => ({ kind, n })) },
    select: { kind: true, n: true, value: true },
  });
  const values = new Map(rows.filter((r) => r.value !== null).map((r) => [`<${r.kind}_${r.n}>`, r.value!]));
  return { values, missing: wanted.map((w) => w.token).filter((t) => !values.has(t)) };
}

/** The tokens of `scope` a value holds (a token the scope does not know is plain text). */
export async function knownTokens(db: Db, scope: string, value: unknown): Promise<string[]> {
  const tokens = tokensIn(value);
  if (tokens.length === 0) return [];
  const { values } = await lookup(db, scope, tokens);
  return tokens.filter((t) => values.has(t));
}

/** `value` with `fn` applied to the string at `path` (each element for `[]`), the rest unchanged. */
async function mapAt(value: JsonValue, path: readonly string[], fn: (text: string) => Promise<string>): Promise<JsonValue> {
  if (path.length === 0) return typeof value === "string" ? fn(value) : value;
  const [segment, ...rest] = path as [string, ...string[]];
  const many = segment.endsWith("[]");
  const key = many ? segment.slice(0, -2) : segment;
  if (value === null || typeof value !== "object" || Array.isArray(value) || !Object.hasOwn(value, key)) return value;
  const child = value[key]!;
  const mapped = many ? (Array.isArray(child) ? await Promise.all(child.map((item) => mapAt(item, rest, fn))) : child) : await mapAt(child, rest, fn);
  return { ...value, [key]: mapped };
}

/**
 * `args` with the scope's tokens replaced by their values — only at the argument fields the config
 * marks as personal data (`piiFields`, such as sendReminderEmail's `to`), and only tokens of the
 * field's kind. Token text anywhere else (a message a customer wrote, say) stays text: a token is
 * restored where the tool is declared to take one, never because some string held it.
 */
export async function restoreTokens(
  db: Db,
  scope: string,
  args: JsonValue,
  fields: Readonly<Record<string, PiiTokenKind>>,
): Promise<{ value: JsonValue; restored: string[] }> {
  const restored: string[] = [];
  let value = args;
  for (const [path, kind] of Object.entries(fields)) {
    value = await mapAt(value, path.split("."), async (text) => {
      const tokens = [...new Set([...text.matchAll(TOKEN_PATTERN)].map((m) => m[0]))];
      if (tokens.length === 0) return text;
      const foreign = tokens.filter((t) => !t.startsWith(`<${kind}_`));
      if (foreign.length > 0) throw new AppError("conflict", `${foreign.join(", ")}: ${path} takes ${kind} tokens only; the tool was not called`);
      const { values, missing } = await lookup(db, scope, tokens);
      if (missing.length > 0) {
        throw new AppError(
          "conflict",
          `${missing.join(", ")}: not a token of this conversation, or its value was deleted by retention; the tool was not called`,
        );
      }
      restored.push(...tokens);
      return text.replace(TOKEN_PATTERN, (token) => values.get(token) ?? token);
    });
  }
  return { value, restored };
}

export type TokenDecision = { refused: null; args: JsonValue; restored: boolean } | { refused: string };

/**
 * What a call may send upstream: for a tool classed pii, `args` with the scope's tokens restored at
 * its marked fields; for any other, `args` unchanged — or, when they hold a token of the scope
 * anywhere (keys included), the refusal: the exfiltration the tokens exist to stop. A token a pii
 * tool's marked field is given that the scope does not know throws (restoreTokens).
 */
export async function decideTokens(
  db: Db,
  scope: string,
  tool: { dataClass: string; name: string; piiFields: Readonly<Record<string, PiiTokenKind>> } | undefined,
  args: JsonValue,
): Promise<TokenDecision> {
  if (tool?.dataClass === "pii") {
    const restored = await restoreTokens(db, scope, args, tool.piiFields);
    return { refused: null, args: restored.value, restored: restored.restored.length > 0 };
  }
  const leaked = await knownTokens(db, scope, args);
  if (leaked.length === 0) return { refused: null, args, restored: false };
  return {
    refused: `${leaked.join(", ")} passed to ${tool?.name ?? "a tool"}, which is not classed pii; a personal-data token is restored only for pii tools`,
  };
}
