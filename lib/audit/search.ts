/**
 * Compliance search over runs: full text over code, purpose, result, error,
 * logs and review comments ("Run"."searchVector", a tsvector kept by a trigger, GIN-indexed; see
 * migration 20261130051110_audit_search_and_seals), and filters by agent, person, status,
 * decision, data class, tool, code hash and time range.
 *
 * Guarantees: every value reaches SQL as a bound parameter (Prisma.sql), never as text; results
 * are newest first with keyset pagination on (createdAt, id) — stable under concurrent inserts,
 * no OFFSET scans; the cursor is opaque and validated. Returns plain DTOs.
 *
 * Does not audit: callers go through service.ts (`searchAudited`), which records "audit.searched".
 */
import { Prisma } from "@/lib/generated/prisma/client";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { AuditFilters } from "./filters";

export type RunSearchItem = {
  id: string;
  createdAt: string;
  agent: string;
  owner: string;
  status: string;
  decision: string | null;
  purpose: string;
  codeSha256: string;
};

export type RunSearchPage = { items: RunSearchItem[]; nextCursor: string | null };

export const SEARCH_PAGE_SIZE = 50;

/**
 * The WHERE clause over `"Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"`.
 * `includeTime` is false for exports, which apply the time range to events instead.
 */
export function runConditions(filters: AuditFilters, { includeTime = true } = {}): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filters.q) parts.push(Prisma.sql`r."searchVector" @@ websearch_to_tsquery('english', ${filters.q})`);
  if (filters.agent) parts.push(Prisma.sql`a.name = ${filters.agent}`);
  if (filters.person) {
    parts.push(Prisma.sql`(lower(u.email) = lower(${filters.person}) OR EXISTS (
      SELECT 1 FROM "Review" v JOIN "User" ru ON ru.id = v."reviewerId"
      WHERE v."runId" = r.id AND lower(ru.email) = lower(${filters.person})))`);
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
  const rows = await db.$queryRaw<Row[]>`
    SELECT r.id::text AS id, r."createdAt", a.name AS agent, u.email AS owner, r.status::text AS status,
           r.decision::text AS decision, left(r.purpose, 300) AS purpose, r."codeSha256"
    FROM "Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"
    WHERE ${runConditions(filters)} ${keyset}
    ORDER BY r."createdAt" DESC, r.id DESC
    LIMIT ${limit + 1}`;
  const items = rows.slice(0, limit).map((row) => ({ ...row, createdAt: row.createdAt.toISOString() }));
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
}
