/**
 * The content of a run that people read — what was asked (code, language, purpose, provenance,
 * inputs), what ran (javascript), what it was allowed (limits, plan) and what it produced (result,
 * error, execution: logs, stats, flags, artifacts) — and its digests in the audit chain
 * (docs/audit.md, "Run content").
 *
 * Guarantees: a field's digest is `jsonDigest` of the column exactly as stored and read back (text
 * as a JSON string, JSON columns in canonical form, NULL as null), so verify.ts recomputes it from
 * the row alone. The event of the write that sets a field carries its digest in
 * `data.contentDigests`: run.submitted for the fields set when the row is inserted, and the
 * transition that writes the others (transitionRun, lib/runs/states.ts); a terminal event digests
 * all of those again, written or not, so what is still NULL when a run ends is sealed as NULL. The
 * migration run_content_write_once makes these columns write-once in the database.
 *
 * Retention (./retention.ts) is the one later change: airlock_purge() deletes a field's payload and
 * its `run.purged` event names the field (and the tool calls purged) and digests what is left.
 * `purgeRecords` reads those events for verify.ts, which accepts a changed field only when a purge
 * event after the digest names it.
 *
 * Refuses nothing itself: it computes; the trigger refuses changes and verification reports them.
 */
import { sequenceAudit } from "@/lib/db/audit-sequence";
import type { Db, Tx } from "@/lib/db";
import { jsonDigest } from "@/lib/digest";

/** Set when the row is inserted (submit), never changed. */
export const SUBMITTED_CONTENT = ["code", "language", "purpose", "provenance", "inputs"] as const;
/** Written once, NULL → value, by a transition; all digested again by the terminal event. */
export const TRANSITION_CONTENT = ["javascript", "limits", "plan", "result", "error", "execution"] as const;

export const RUN_CONTENT_FIELDS = [...SUBMITTED_CONTENT, ...TRANSITION_CONTENT] as const;
export type RunContentField = (typeof RUN_CONTENT_FIELDS)[number];
export type RunContentDigests = Partial<Record<RunContentField, string>>;

export function isRunContentField(name: string): name is RunContentField {
  return (RUN_CONTENT_FIELDS as readonly string[]).includes(name);
}

/** The digests of `fields` of a run row as read back from the database. */
export function contentDigests(row: Partial<Record<RunContentField, unknown>>, fields: readonly RunContentField[]): RunContentDigests {
  return Object.fromEntries(fields.map((field) => [field, jsonDigest(row[field])]));
}

/** Reads `fields` of the run back in the caller's transaction (after its write) and digests them. */
export async function storedContentDigests(tx: Tx, runId: string, fields: readonly RunContentField[]): Promise<RunContentDigests> {
  const select = Object.fromEntries(fields.map((field) => [field, true])) as Record<RunContentField, true>;
  const row = await tx.run.findUniqueOrThrow({ where: { id: runId }, select });
  return contentDigests(row, fields);
}

/** The audit action of a retention purge (./retention.ts). */
export const RUN_PURGED = "run.purged";

/** A `run.purged` event as verification reads it: which fields and tool calls (by seq) it names. */
export type PurgeRecord = { eventId: bigint; fields: string[]; toolCalls: number[] };

/** The `run.purged` events of a run, in chain order (their hashes are checked by the walk itself). */
export async function purgeRecords(db: Db, runId: string): Promise<PurgeRecord[]> {
  await sequenceAudit(db);
  const rows = await db.$queryRaw<{ id: bigint; data: { fields?: unknown; purgedToolCalls?: unknown } }[]>`
    SELECT id, data FROM "AuditEvent" WHERE "subjectType" = 'run' AND "subjectId" = ${runId} AND action = ${RUN_PURGED} ORDER BY id`;
  const list = (value: unknown) => (Array.isArray(value) ? value : []);
  return rows.map((row) => ({
    eventId: row.id,
    fields: list(row.data.fields).filter((f): f is string => typeof f === "string"),
    toolCalls: list(row.data.purgedToolCalls).filter((n): n is number => typeof n === "number"),
  }));
}

/**
 * What readers show instead of a purged field: "purged on DATE by retention", from the run's
 * `purged` column ({field: ISO time}); null when the field was not purged.
 */
export function purgeNotice(purged: unknown, field: string): string | null {
  if (!purged || typeof purged !== "object" || Array.isArray(purged)) return null;
  const at = (purged as Record<string, unknown>)[field];
  return typeof at === "string" ? `purged on ${at.slice(0, 10)} by retention` : null;
}

/** Whether `value` reads as a purge notice (purgeNotice's text, which export.ts writes too). */
export function isPurgeNotice(value: unknown): boolean {
  return typeof value === "string" && /^purged on \d{4}-\d{2}-\d{2} by retention$/.test(value);
}
