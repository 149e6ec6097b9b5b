/**
 * Compliance search over runs: full text over code, purpose, provenance, tool-call arguments and
 * results, result, error, logs, review comments and the reasons of result releases
 * ("Run"."searchVector", a tsvector kept by triggers, GIN-indexed; see migrations
 * 20261130051110_audit_search_and_seals, 20261202130000_search_identifiers and
 * 20261205073430_search_release_reasons; the documents runs are owed are built first,
 * ./search-refresh.ts), and filters by agent, person, status, decision, data class,
 * tool, code hash and time range.
 *
 * Identifiers match by their parts: the document holds each identifier's parts in order
 * (`tools.ledger.issueRefund` → "tools ledger issue refund", "issuerefund", "ledger.issuerefund"),
 * and a query word with parts (`issueRefund`, `ledger.issueRefund`) also matches the phrase of its
 * parts. Agent and person filters match any part of a name or email, in any case (ILIKE with the
 * wildcards escaped).
 *
 * Guarantees: every value reaches SQL as a bound parameter (Prisma.sql), never as text; results
 * are newest first with keyset pagination on (createdAt, id) — stable under concurrent inserts,
 * no OFFSET scans; the cursor is opaque and validated. Returns plain DTOs.
 *
 * Does not audit: callers go through service.ts (`searchAudited`), which records "audit.searched".
 */
import { Prisma } from "@/lib/generated/prisma/client";
import { RELEASE_EXPIRED_SQL } from "@/lib/contracts/run-states";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { AuditFilters } from "./filters";
import { refreshSearchDocuments } from "./search-refresh";

export type RunSearchItem = {
  id: string;
  createdAt: string;
  agent: string;
  owner: string;
  status: string;
  /** The run's error code, when it has one (a run that succeeded may: SWALLOWED_FAILURE). */
  errorCode: string | null;
  decision: string | null;
  purpose: string;
  codeSha256: string;
};

export type RunSearchPage = { items: RunSearchItem[]; nextCursor: string | null };

export const SEARCH_PAGE_SIZE = 50;

const IDENTIFIER = /[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*/;
const HAS_PARTS = /[._$]|[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/;

/**
 * The parts of an identifier in a word, as the search document splits them ("issue refund" for
 * `issueRefund`, "ledger issue refund" for `ledger.issueRefund`), or null when it has none.
 */
export function identifierParts(word: string): string | null {
  const identifier = IDENTIFIER.exec(word)?.[0];
  if (!identifier || !HAS_PARTS.test(identifier)) return null;
  const parts = identifier
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[._$]+/)
    .join(" ")
    .trim()
    .toLowerCase();
  return parts.includes(" ") ? parts : null;
}

/**
 * The tsquery of `q` in web-search syntax (words, "quoted phrases", -word, or), where each word
 * with identifier parts also matches the phrase of its parts. Built from websearch_to_tsquery and
 * phraseto_tsquery of bound parameters; terms are ANDed, `or` separates alternatives (as
 * websearch_to_tsquery groups them).
 */
export function textQuery(q: string): Prisma.Sql {
  const groups: Prisma.Sql[][] = [[]];
  for (const [, negation, phrase, word] of q.matchAll(/(-?)"([^"]*)"?|(\S+)/g)) {
    if (word !== undefined && /^or$/i.test(word)) {
      if (groups.at(-1)!.length > 0) groups.push([]);
      continue;
    }
    const negated = phrase !== undefined ? negation === "-" : word!.length > 1 && word!.startsWith("-");
    const bare = phrase !== undefined ? `"${phrase}"` : negated ? word!.slice(1) : word!;
    const parts = phrase === undefined ? identifierParts(bare) : null;
    const term = parts
      ? Prisma.sql`(websearch_to_tsquery('english', ${bare}) || phraseto_tsquery('english', ${parts}))`
      : Prisma.sql`websearch_to_tsquery('english', ${bare})`;
    groups.at(-1)!.push(negated ? Prisma.sql`(!! ${term})` : term);
  }
  const alternatives = groups.filter((group) => group.length > 0).map((group) => Prisma.sql`(${Prisma.join(group, " && ")})`);
  return alternatives.length ? Prisma.sql`(${Prisma.join(alternatives, " || ")})` : Prisma.sql`websearch_to_tsquery('english', '')`;
}

/** `value` as an ILIKE pattern matching it anywhere, its own %, _ and backslash taken literally. */
export function containsPattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The WHERE clause over `"Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"`.
 * `includeTime` is false for exports, which apply the time range to events instead.
 */
export function runConditions(filters: AuditFilters, { includeTime = true } = {}): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filters.q) parts.push(Prisma.sql`r."searchVector" @@ ${textQuery(filters.q)}`);
  if (filters.agent) parts.push(Prisma.sql`a.name ILIKE ${containsPattern(filters.agent)}`);
  if (filters.person) {
    const person = containsPattern(filters.person);
    // The owner, a reviewer, or who released its withheld result.
    parts.push(Prisma.sql`(u.email ILIKE ${person} OR u.name ILIKE ${person} OR EXISTS (
      SELECT 1 FROM "Review" v JOIN "User" ru ON ru.id = v."reviewerId"
      WHERE v."runId" = r.id AND (ru.email ILIKE ${person} OR ru.name ILIKE ${person})) OR EXISTS (
      SELECT 1 FROM "ResultRelease" x JOIN "User" xu ON xu.id = x."reviewerId"
      WHERE x."runId" = r.id AND (xu.email ILIKE ${person} OR xu.name ILIKE ${person})))`);
  }
  if (filters.status) parts.push(Prisma.sql`r.status = ${filters.status}::"RunStatus"`);
  if (filters.decision) parts.push(Prisma.sql`r.decision = ${filters.decision}::"Decision"`);
  if (filters.dataClass) {
    parts.push(Prisma.sql`((r.facts -> 'dataClasses') @> jsonb_build_array(${filters.dataClass}::text)
      OR r.inputs @> jsonb_build_array(jsonb_build_object('dataClass', ${filters.dataClass}::text)))`);
  }
  if (filters.tool) parts.push(Prisma.sql`r."capabilitySet" @> jsonb_build_array(${filters.tool}::text)`);
  if (filters.codeHash) parts.push(Prisma.sql`r."codeSha256" = ${filters.codeHash}`);
  if (includeTime && filters.since) parts.push(Prisma.sql`r."createdAt" >= ${filters.since}`);
  if (includeTime && filters.until) parts.push(Prisma.sql`r."createdAt" < ${filters.until}`);
  return parts.length ? Prisma.join(parts, " AND ") : Prisma.sql`TRUE`;
}

export function encodeCursor(createdAt: Date | string, id: string): string {
  const iso = typeof createdAt === "string" ? createdAt : createdAt.toISOString();
  return Buffer.from(`${iso}|${id}`).toString("base64url");
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  // Buffer skips characters outside base64url; they would reach the audit event ("after") unread.
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) throw new AppError("bad_request", "The page cursor is not valid; start the search again.");
  const [iso, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const createdAt = new Date(iso ?? "");
  if (!id || !/^[0-9a-f-]{36}$/i.test(id) || Number.isNaN(createdAt.getTime())) {
    throw new AppError("bad_request", "The page cursor is not valid; start the search again.");
  }
  return { createdAt, id };
}

type Row = Omit<RunSearchItem, "createdAt"> & { createdAt: Date };

export async function searchRuns(db: Db | Tx, filters: AuditFilters, options: { after?: string | null; limit?: number } = {}): Promise<RunSearchPage> {
  const limit = Math.min(Math.max(options.limit ?? SEARCH_PAGE_SIZE, 1), 200);
  const after = options.after ? decodeCursor(options.after) : null;
  const keyset = after ? Prisma.sql`AND (r."createdAt", r.id) < (${after.createdAt}, ${after.id}::uuid)` : Prisma.empty;
  if (filters.q) await refreshSearchDocuments(db, "all");
  const rows = await db.$queryRaw<Row[]>`
    SELECT r.id::text AS id, r."createdAt", a.name AS agent, u.email AS owner, r.status::text AS status,
           coalesce(r.error ->> 'code', CASE WHEN ${Prisma.raw(RELEASE_EXPIRED_SQL)} THEN 'RELEASE_EXPIRED' END) AS "errorCode",
           r.decision::text AS decision, left(r.purpose, 300) AS purpose, r."codeSha256"
    FROM "Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"
    WHERE ${runConditions(filters)} ${keyset}
    ORDER BY r."createdAt" DESC, r.id DESC
    LIMIT ${limit + 1}`;
  const items = rows.slice(0, limit).map((row) => ({ ...row, createdAt: row.createdAt.toISOString() }));
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
}
