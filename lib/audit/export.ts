/**
 * Streaming export of audit events as JSONL or CSV.
 *
 * What is exported: audit events with id ≤ the chain head at export time (so the export is a
 * fixed snapshot, whatever is appended while it streams), in id order, each with its prevHash and
 * hash so a third party can re-check the chain. The search filters decide which: with only a
 * time range, every event in it (by event time); with any run filter (q, agent, person, status,
 * decision, data class, tool, code hash), the events whose subject is a matching run, within the
 * time range.
 *
 * The manifest (row count, time range of the rows, the filters, the chain head id/hash/time at
 * export time) is computed before the first row: for JSONL it is the first line
 * (`{"manifest": {...}}`); CSV has no place for it, so callers deliver it beside the file (the
 * route in a response header, the CLI on stderr or in --manifest FILE).
 *
 * Guarantees: rows are read in keyset batches (never the whole log in memory); JSONL and CSV lines
 * are built by PostgreSQL; CSV text fields are quoted per RFC 4180 and cells
 * starting with = + - @ are prefixed with ' so a spreadsheet does not evaluate them. Does not audit: service.ts does.
 */
import { Prisma } from "@/lib/generated/prisma/client";
import type { Db } from "@/lib/db";
import { filtersForRecord, hasRunFilters, type AuditFilters } from "./filters";
import { runConditions } from "./search";

export const EXPORT_FORMATS = ["jsonl", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_COLUMNS = ["id", "at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "prevHash", "hash"] as const;

export type ExportManifest = {
  kind: "airlock.audit-export";
  version: 1;
  format: ExportFormat;
  exportedAt: string;
  exportedBy: string;
  filters: Record<string, string>;
  scope: "all events" | "events of matching runs";
  rowCount: number;
  firstEventId: string | null;
  lastEventId: string | null;
  timeRange: { from: string | null; to: string | null };
  chainHead: { id: string; hash: string; at: string } | null;
  columns: readonly string[];
};

export type PreparedExport = { manifest: ExportManifest; rows: AsyncGenerator<string> };

function eventConditions(filters: AuditFilters, headId: bigint): Prisma.Sql {
  const parts: Prisma.Sql[] = [Prisma.sql`e.id <= ${headId}`];
  if (filters.since) parts.push(Prisma.sql`e.at >= ${filters.since}`);
  if (filters.until) parts.push(Prisma.sql`e.at < ${filters.until}`);
  if (hasRunFilters(filters)) {
    parts.push(Prisma.sql`e."subjectType" = 'run' AND e."subjectId" IN (
      SELECT r.id::text FROM "Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"
      WHERE ${runConditions(filters, { includeTime: false })})`);
  }
  return Prisma.join(parts, " AND ");
}

const ISO_AT = `to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const JSONL_LINE = Prisma.raw(`json_build_object(
  'id', e.id::text, 'at', ${ISO_AT}, 'actorType', e."actorType", 'actorId', e."actorId",
  'action', e.action, 'subjectType', e."subjectType", 'subjectId', e."subjectId",
  'data', e.data, 'prevHash', e."prevHash", 'hash', e.hash)::text`);

/**
 * A CSV text field in SQL: quoted (RFC 4180, " doubled) and prefixed with ' when it starts with
 * = + - @ tab or CR (spreadsheet formula injection). NULL is an empty field. Ids, times, JSON and
 * hashes cannot start with those characters.
 */
const csvText = (column: string) =>
  `coalesce('"' || replace(CASE WHEN ${column} ~ '^[=+@\\t\\r-]' THEN '''' || ${column} ELSE ${column} END, '"', '""') || '"', '')`;

const CSV_LINE = Prisma.raw(
  [
    `e.id::text`,
    ISO_AT,
    csvText(`e."actorType"`),
    csvText(`e."actorId"`),
    csvText(`e.action`),
    csvText(`e."subjectType"`),
    csvText(`e."subjectId"`),
    `'"' || replace(e.data::text, '"', '""') || '"'`,
    `e."prevHash"`,
    `e.hash`,
  ].join(` || ',' || `),
);

/**
 * Takes the snapshot (chain head, count, time range) and returns the manifest and a generator of
 * output chunks (each a whole number of lines; the JSONL manifest line first, the CSV header first).
 */
export async function prepareExport(
  db: Db,
  filters: AuditFilters,
  format: ExportFormat,
  exportedBy: string,
  options: { batchSize?: number } = {},
): Promise<PreparedExport> {
  const batchSize = options.batchSize ?? 10_000;
  const [head] = await db.$queryRaw<{ id: bigint; hash: string; at: Date }[]>`
    SELECT id, hash, at FROM "AuditEvent" ORDER BY id DESC LIMIT 1`;
  const headId = head?.id ?? 0n;
  const where = eventConditions(filters, headId);
  const [stats] = await db.$queryRaw<{ count: bigint; first: bigint | null; last: bigint | null; from: Date | null; to: Date | null }[]>`
    SELECT count(*) AS count, min(e.id) AS first, max(e.id) AS last, min(e.at) AS "from", max(e.at) AS "to"
    FROM "AuditEvent" e WHERE ${where}`;
  const manifest: ExportManifest = {
    kind: "airlock.audit-export",
    version: 1,
    format,
    exportedAt: new Date().toISOString(),
    exportedBy,
    filters: filtersForRecord(filters),
    scope: hasRunFilters(filters) ? "events of matching runs" : "all events",
    rowCount: Number(stats?.count ?? 0n),
    firstEventId: stats?.first?.toString() ?? null,
    lastEventId: stats?.last?.toString() ?? null,
    timeRange: { from: stats?.from?.toISOString() ?? null, to: stats?.to?.toISOString() ?? null },
    chainHead: head ? { id: head.id.toString(), hash: head.hash, at: head.at.toISOString() } : null,
    columns: EXPORT_COLUMNS,
  };

  const line = format === "jsonl" ? JSONL_LINE : CSV_LINE;
  const separator = format === "jsonl" ? "\n" : "\r\n";
  async function* rows(): AsyncGenerator<string> {
    yield format === "jsonl" ? JSON.stringify({ manifest }) + "\n" : EXPORT_COLUMNS.join(",") + "\r\n";
    if (manifest.rowCount === 0) return;
    let cursor = (stats?.first ?? 1n) - 1n;
    for (;;) {
      // Each line is built by PostgreSQL; Node only joins the batch (no per-column conversion).
      const batch = await db.$queryRaw<{ id: bigint; line: string }[]>`
        SELECT e.id, ${line} AS line FROM "AuditEvent" e
        WHERE e.id > ${cursor} AND ${where} ORDER BY e.id LIMIT ${batchSize}`;
      if (batch.length === 0) return;
      yield batch.map((row) => row.line).join(separator) + separator;
      cursor = batch[batch.length - 1]!.id;
      if (batch.length < batchSize) return;
    }
  }
  return { manifest, rows: rows() };
}
