/**
 * Streaming export of the audit log as JSONL or CSV: one row per audit event, or one row per run.
 *
 * Events (`rows: "events"`): audit events with id ≤ the chain head at export time (so the export
 * is a fixed snapshot, whatever is appended while it streams), in id order, each with its prevHash
 * and hash so a third party can re-check the chain. The search filters decide which: with only a
 * time range, every event in it (by event time); with any run filter (q, agent, person, status,
 * decision, data class, tool, code hash), the events whose subject is a matching run, within the
 * time range. `excludeAuditReads` leaves out the log's own reads and checks (`audit.*`: searched,
 * viewed, exported, verified, checkpointed…); the manifest says so. Beside each id, the names a
 * person reads: the actor's name (a person's name, an agent's name, the system actor) and a
 * person's email, the subject's name (a user's email, an agent's name, a run's agent). And what
 * happened, while retention keeps it: every run event carries the run's purpose, `run.submitted`
 * its code, the terminal event its result, error and tool calls with their arguments and results.
 * Content retention deleted reads `purged on YYYY-MM-DD by retention`.
 *
 * Runs (`rows: "runs"`): one row per matching run (the search's filters, time range on the
 * submission time), oldest first: purpose, agent, owner, status, decision, reviewers and their
 * verdicts, tool-call count, result, the outcome the agent recorded, and a link to its timeline.
 *
 * Times: JSONL keeps ISO 8601 (`2026-11-30T14:05:09.123Z`); CSV writes `2026-11-30 14:05:09.123`
 * in UTC, which LibreOffice and Excel read as a date and time, and its header says UTC.
 *
 * The manifest (row count, time range of the rows, the filters, the options, the chain head
 * id/hash/time at export time) is computed before the first row: for JSONL it is the first line
 * (`{"manifest": {...}}`); CSV has no place for it, so callers deliver it beside the file (the
 * route in a response header, the CLI on stderr or in --manifest FILE).
 *
 * Guarantees: rows are read in keyset batches (never the whole log in memory); JSONL and CSV lines
 * are built by PostgreSQL; CSV text fields are quoted per RFC 4180 and cells starting with
 * = + - @ tab or CR are prefixed with ' so a spreadsheet does not evaluate them (the JSONL keeps
 * values untouched). Does not audit: service.ts does.
 */
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { Prisma } from "@/lib/generated/prisma/client";
import type { Db } from "@/lib/db";
import { RELEASE_EXPIRED_SQL, TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import { consoleBaseUrl } from "@/lib/env";
import { filtersForRecord, hasRunFilters, type AuditFilters } from "./filters";
import { runConditions } from "./search";
import { refreshSearchDocuments } from "./search-refresh";

export const EXPORT_FORMATS = ["jsonl", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export const EXPORT_ROWS = ["events", "runs"] as const;
export type ExportRows = (typeof EXPORT_ROWS)[number];

export type ExportOptions = {
  /** One row per event (default) or per run. */
  rows?: ExportRows;
  /** Leave out the log's own reads and checks (actions `audit.*`); events only. */
  excludeAuditReads?: boolean;
  /** Where the console is, for the per-run links (`<baseUrl>/audit/runs/<id>`); default consoleBaseUrl(). */
  baseUrl?: string;
  batchSize?: number;
  /** Bytes of lines per batch besides its first line (default MAX_BATCH_BYTES). */
  batchBytes?: number;
};

export type ExportManifest = {
  kind: "airlock.audit-export";
  version: 2;
  format: ExportFormat;
  rows: ExportRows;
  exportedAt: string;
  exportedBy: string;
  filters: Record<string, string>;
  scope: "all events" | "events of matching runs" | "matching runs";
  /** Events only: whether the log's own reads (`audit.*`) were left out. */
  auditReads: "included" | "excluded";
  rowCount: number;
  firstEventId: string | null;
  lastEventId: string | null;
  /** Events: their times; runs: their submission times. */
  timeRange: { from: string | null; to: string | null };
  chainHead: { id: string; hash: string; at: string } | null;
  columns: readonly string[];
  timeZone: "UTC";
};

export type PreparedExport = { manifest: ExportManifest; rows: AsyncGenerator<string> };

/** A column: its CSV header, the SQL of its CSV cell, and the SQL of its JSONL value. */
type Column = { csv: string; key: string; cell: string; json: string };

const UUID = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;
/** A text id as a uuid for an indexed join, or NULL when it is not one (never a cast error). */
const uuidOf = (text: string) => `CASE WHEN ${text} ~ ${UUID} THEN (${text})::uuid END`;

/** A constant as an SQL string literal (standard_conforming_strings: only ' needs doubling). */
const sqlLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** A time as the CSV writes it: UTC, `YYYY-MM-DD HH:MM:SS.mmm`. */
const csvTime = (column: string) => `coalesce(to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'), '')`;
const isoTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A CSV text field in SQL: quoted (RFC 4180, " doubled) and prefixed with ' when it starts with
 * = + - @ tab or CR (spreadsheet formula injection). NULL is an empty field.
 */
const csvText = (column: string) =>
  `coalesce('"' || replace(CASE WHEN ${column} ~ '^[=+@\\t\\r-]' THEN '''' || ${column} ELSE ${column} END, '"', '""') || '"', '')`;

const text = (csv: string, key: string, sql: string): Column => ({ csv, key, cell: csvText(sql), json: sql });
const time = (csv: string, key: string, sql: string): Column => ({ csv, key, cell: csvTime(sql), json: isoTime(sql) });
/** A JSON value: its JSON text in the CSV cell (a JSON string's text starts with a quote, never a formula). */
const json = (csv: string, key: string, sql: string): Column => ({ csv, key, cell: csvText(`(${sql})::text`), json: sql });
/** A plain value that cannot start a formula (ids, hashes, counts). */
const plain = (csv: string, key: string, sql: string): Column => ({ csv, key, cell: `coalesce((${sql})::text, '')`, json: sql });

/** `purged on YYYY-MM-DD by retention` when the run's `field` was purged, else NULL. */
const purgedMark = (field: string) =>
  `CASE WHEN r."purged" ? '${field}' THEN 'purged on ' || to_char((r."purged" ->> '${field}')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' by retention' END`;
const runText = (field: string, column: string) => `coalesce(${purgedMark(field)}, ${column})`;
const runJson = (field: string, column: string) => `coalesce(to_json(${purgedMark(field)}), ${column}::json)`;
const callPurged = `'purged on ' || to_char(c."purgedAt" AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' by retention'`;

/**
 * Bytes of lines one batch hands to Node (besides its first line, always taken): a batch of events
 * that each carry a run's tool calls stays bounded however large the calls. One line is bounded by
 * what a run may store (at most maxToolCalls calls of 64 KiB arguments and results each).
 */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

const TERMINAL_ACTIONS = TERMINAL_STATUSES.map((status) => `'run.${status}'`).join(", ");
const TERMINAL = `e.action IN (${TERMINAL_ACTIONS})`;

const EVENT_COLUMNS: Column[] = [
  plain("id", "id", "e.id::text"),
  { csv: "at (UTC)", key: "at", cell: csvTime("e.at"), json: isoTime("e.at") },
  text("actorType", "actorType", `e."actorType"`),
  text("actorId", "actorId", `e."actorId"`),
  text("actorName", "actorName", `CASE e."actorType" WHEN 'user' THEN au.name WHEN 'agent' THEN ag.name ELSE e."actorId" END`),
  text("actorEmail", "actorEmail", `au.email`),
  text("action", "action", `e.action`),
  text("subjectType", "subjectType", `e."subjectType"`),
  text("subjectId", "subjectId", `e."subjectId"`),
  text("subjectName", "subjectName", `CASE e."subjectType" WHEN 'run' THEN ra.name WHEN 'user' THEN su.email WHEN 'agent' THEN sa.name END`),
  text("purpose", "purpose", runText("purpose", "r.purpose")),
  text("code", "code", `CASE WHEN e.action = 'run.submitted' THEN ${runText("code", "r.code")} END`),
  json("result", "result", `CASE WHEN ${TERMINAL} THEN ${runJson("result", "r.result")} END`),
  json("error", "error", `CASE WHEN ${TERMINAL} THEN ${runJson("error", "r.error")} END`),
  json(
    "toolCalls",
    "toolCalls",
    `CASE WHEN r.id IS NOT NULL AND e.data ? 'toolCallsDigest' THEN (
      SELECT coalesce(json_agg(json_build_object(
        'seq', c.seq, 'tool', c.server || '.' || c.tool, 'phase', c.phase, 'outcome', c.outcome,
        'args', CASE WHEN c."purgedAt" IS NOT NULL THEN to_json(${callPurged}) ELSE c.args::json END,
        'result', CASE WHEN c."purgedAt" IS NOT NULL THEN to_json(${callPurged}) ELSE c.result::json END,
        'error', c.error) ORDER BY c.seq), '[]'::json)
      FROM "RunToolCall" c WHERE c."runId" = r.id) END`,
  ),
  json("data", "data", "e.data"),
  plain("prevHash", "prevHash", `e."prevHash"`),
  plain("hash", "hash", "e.hash"),
];

const EVENT_FROM = `"AuditEvent" e
  LEFT JOIN "User" au ON e."actorType" = 'user' AND au.id = ${uuidOf(`e."actorId"`)}
  LEFT JOIN "Agent" ag ON e."actorType" = 'agent' AND ag.id = ${uuidOf(`e."actorId"`)}
  LEFT JOIN "Run" r ON e."subjectType" = 'run' AND r.id = ${uuidOf(`e."subjectId"`)}
  LEFT JOIN "Agent" ra ON ra.id = r."agentId"
  LEFT JOIN "User" su ON e."subjectType" = 'user' AND su.id = ${uuidOf(`e."subjectId"`)}
  LEFT JOIN "Agent" sa ON e."subjectType" = 'agent' AND sa.id = ${uuidOf(`e."subjectId"`)}`;

const RUN_COLUMNS = (baseUrl: string): Column[] => [
  plain("runId", "runId", "r.id::text"),
  time("submitted (UTC)", "submittedAt", `r."createdAt"`),
  time("finished (UTC)", "finishedAt", `r."finishedAt"`),
  text("agent", "agent", "a.name"),
  text("owner", "owner", "u.email"),
  text("purpose", "purpose", runText("purpose", "r.purpose")),
  text("status", "status", "r.status::text"),
  text("decision", "decision", "r.decision::text"),
  text(
    "reviewers",
    "reviewers",
    `(SELECT string_agg(ru.name || ' <' || ru.email || '>', '; ' ORDER BY v."createdAt", v.id) FROM "Review" v JOIN "User" ru ON ru.id = v."reviewerId" WHERE v."runId" = r.id)`,
  ),
  text("verdicts", "verdicts", `(SELECT string_agg(v.verdict::text, '; ' ORDER BY v."createdAt", v.id) FROM "Review" v WHERE v."runId" = r.id)`),
  // Who released a withheld result (a failed check, a held one), and why: a decision like a review's.
  text(
    "releases",
    "releases",
    `(SELECT string_agg(ru.name || ' <' || ru.email || '>: ' || x.comment, '; ' ORDER BY x."createdAt", x.id) FROM "ResultRelease" x JOIN "User" ru ON ru.id = x."reviewerId" WHERE x."runId" = r.id)`,
  ),
  // The calls the run made; its plan preview's (reads, intercepted writes) are not the run's.
  plain("toolCalls", "toolCalls", `(SELECT count(*) FROM "RunToolCall" c WHERE c."runId" = r.id AND c.phase = 'apply')`),
  json("result", "result", runJson("result", "r.result")),
  // A run that ran and expired waiting for its result's release shows why (run-states.ts shownErrorCode).
  json(
    "error",
    "error",
    `coalesce(${runJson("error", "r.error")}, CASE WHEN ${RELEASE_EXPIRED_SQL} THEN json_build_object('code', 'RELEASE_EXPIRED', 'message', 'No reviewer released the result before the hold expired; it stays withheld, and writes the run made stand.') END)`,
  ),
  text(
    "outcome",
    "outcome",
    `(SELECT o.action || coalesce(': ' || o.detail, '') FROM "RunOutcome" o WHERE o."runId" = r.id ORDER BY o.at DESC, o.id DESC LIMIT 1)`,
  ),
  text("link", "link", `${sqlLiteral(`${baseUrl}/audit/runs/`)} || r.id::text`),
];

const RUN_FROM = `"Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"`;

function lines(columns: Column[], format: ExportFormat): Prisma.Sql {
  if (format === "csv") return Prisma.raw(columns.map((c) => c.cell).join(` || ',' || `));
  return Prisma.raw(`json_build_object(${columns.map((c) => `'${c.key}', ${c.json}`).join(", ")})::text`);
}

function eventConditions(filters: AuditFilters, headId: bigint, excludeAuditReads: boolean): Prisma.Sql {
  const parts: Prisma.Sql[] = [Prisma.sql`e.id <= ${headId}`];
  if (filters.since) parts.push(Prisma.sql`e.at >= ${filters.since}`);
  if (filters.until) parts.push(Prisma.sql`e.at < ${filters.until}`);
  if (excludeAuditReads) parts.push(Prisma.sql`e.action NOT LIKE 'audit.%'`);
  if (hasRunFilters(filters)) {
    parts.push(Prisma.sql`e."subjectType" = 'run' AND e."subjectId" IN (
      SELECT r.id::text FROM "Run" r JOIN "Agent" a ON a.id = r."agentId" JOIN "User" u ON u.id = a."ownerId"
      WHERE ${runConditions(filters, { includeTime: false })})`);
  }
  return Prisma.join(parts, " AND ");
}

/**
 * Takes the snapshot (chain head, count, time range) and returns the manifest and a generator of
 * output chunks (each a whole number of lines; the JSONL manifest line first, the CSV header first).
 */
export async function prepareExport(
  db: Db,
  filters: AuditFilters,
  format: ExportFormat,
  exportedBy: string,
  options: ExportOptions = {},
): Promise<PreparedExport> {
  const batchSize = options.batchSize ?? 10_000;
  const batchBytes = options.batchBytes ?? MAX_BATCH_BYTES;
  const kind = options.rows ?? "events";
  const excludeAuditReads = kind === "events" && options.excludeAuditReads === true;
  await sequenceAudit(db);
  if (filters.q) await refreshSearchDocuments(db, "all");
  const [head] = await db.$queryRaw<{ id: bigint; hash: string; at: Date }[]>`
    SELECT id, hash, at FROM "AuditEvent" ORDER BY id DESC LIMIT 1`;
  const headId = head?.id ?? 0n;
  const columns = kind === "events" ? EVENT_COLUMNS : RUN_COLUMNS(options.baseUrl ?? consoleBaseUrl());
  const where = kind === "events" ? eventConditions(filters, headId, excludeAuditReads) : runConditions(filters);
  const [stats] =
    kind === "events"
      ? await db.$queryRaw<{ count: bigint; first: bigint | null; last: bigint | null; from: Date | null; to: Date | null }[]>`
          SELECT count(*) AS count, min(e.id) AS first, max(e.id) AS last, min(e.at) AS "from", max(e.at) AS "to"
          FROM "AuditEvent" e WHERE ${where}`
      : await db.$queryRaw<{ count: bigint; first: null; last: null; from: Date | null; to: Date | null }[]>`
          SELECT count(*) AS count, NULL AS first, NULL AS last, min(r."createdAt") AS "from", max(r."createdAt") AS "to"
          FROM ${Prisma.raw(RUN_FROM)} WHERE ${where}`;
  const manifest: ExportManifest = {
    kind: "airlock.audit-export",
    version: 2,
    format,
    rows: kind,
    exportedAt: new Date().toISOString(),
    exportedBy,
    filters: filtersForRecord(filters),
    scope: kind === "runs" ? "matching runs" : hasRunFilters(filters) ? "events of matching runs" : "all events",
    auditReads: excludeAuditReads ? "excluded" : "included",
    rowCount: Number(stats?.count ?? 0n),
    firstEventId: stats?.first?.toString() ?? null,
    lastEventId: stats?.last?.toString() ?? null,
    timeRange: { from: stats?.from?.toISOString() ?? null, to: stats?.to?.toISOString() ?? null },
    chainHead: head ? { id: head.id.toString(), hash: head.hash, at: head.at.toISOString() } : null,
    columns: columns.map((c) => (format === "csv" ? c.csv : c.key)),
    timeZone: "UTC",
  };

  const line = lines(columns, format);
  const separator = format === "jsonl" ? "\n" : "\r\n";
  const header = format === "jsonl" ? JSON.stringify({ manifest }) + "\n" : columns.map((c) => c.csv).join(",") + "\r\n";

  async function* eventRows(): AsyncGenerator<string> {
    yield header;
    if (manifest.rowCount === 0) return;
    let cursor = (stats?.first ?? 1n) - 1n;
    for (;;) {
      // Each line is built by PostgreSQL; Node only joins the batch (no per-column conversion).
      const batch = await db.$queryRaw<{ id: bigint; line: string }[]>`
        SELECT id, line FROM (
          SELECT id, line, sum(octet_length(line)) OVER (ORDER BY id) - octet_length(line) AS before
          FROM (SELECT e.id, ${line} AS line FROM ${Prisma.raw(EVENT_FROM)} WHERE e.id > ${cursor} AND ${where} ORDER BY e.id LIMIT ${batchSize}) page
        ) sized WHERE before < ${batchBytes} ORDER BY id`;
      if (batch.length === 0) return;
      yield batch.map((row) => row.line).join(separator) + separator;
      cursor = batch[batch.length - 1]!.id;
    }
  }

  async function* runRows(): AsyncGenerator<string> {
    yield header;
    if (manifest.rowCount === 0) return;
    let after: { createdAt: Date; id: string } | null = null;
    for (;;) {
      const keyset: Prisma.Sql = after ? Prisma.sql`AND (r."createdAt", r.id) > (${after.createdAt}, ${after.id}::uuid)` : Prisma.empty;
      const batch: { id: string; createdAt: Date; line: string }[] = await db.$queryRaw`
        SELECT id, "createdAt", line FROM (
          SELECT id, "createdAt", line, sum(octet_length(line)) OVER (ORDER BY "createdAt", id) - octet_length(line) AS before
          FROM (SELECT r.id::text AS id, r."createdAt", ${line} AS line FROM ${Prisma.raw(RUN_FROM)}
                WHERE ${where} ${keyset} ORDER BY r."createdAt", r.id LIMIT ${batchSize}) page
        ) sized WHERE before < ${batchBytes} ORDER BY "createdAt", id`;
      if (batch.length === 0) return;
      yield batch.map((row) => row.line).join(separator) + separator;
      const last = batch[batch.length - 1]!;
      after = { createdAt: last.createdAt, id: last.id };
    }
  }

  return { manifest, rows: kind === "events" ? eventRows() : runRows() };
}
