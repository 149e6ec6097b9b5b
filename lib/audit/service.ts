/**
 * The audited doors to the audit log: search, a run's timeline, export, verification.
 * The console page, the export route, the server action and the CLI all call these; none of them
 * reads the log on its own.
 *
 * Guarantees:
 * - each function checks the actor's scope first (audit:read; export needs audit:export);
 * - every search, view, export and verification is itself an audit event ("audit.searched",
 *   "audit.viewed", "audit.exported", "audit.verified", "audit.checkpointed") naming who looked at
 *   what; the event is written *before* results are handed back, and if it cannot be written the
 *   caller gets an error instead of the data (reading unaudited is not possible);
 * - the audit event is appended after the read, in its own short transaction, so a slow search
 *   never holds the chain's advisory lock.
 * - a checkpoint is signed only for a head that was just verified (whole chain, or everything
 *   after the last valid checkpoint) and only when the verification reported no problem at all —
 *   missing checkpoints included, so emptying the checkpoint directory is not healed by the next
 *   verification. The checkpoint job extends coverage from the newest valid checkpoint; with
 *   none, it signs only a log younger than the allowed gap, or when an operator asks for it
 *   (`bootstrap`, recorded in its audit event).
 */
import type { Actor } from "@/lib/contracts/scopes";
import { actorLabel, requireScope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { loadCheckpoints, writeCheckpoint, type CheckpointConfig } from "./checkpoints";
import { prepareExport, type ExportFormat, type PreparedExport } from "./export";
import { filtersForRecord, type AuditFilters } from "./filters";
import { runTimeline, type RunTimeline } from "./presenter";
import { recordAudit } from "./record";
import { searchRuns, type RunSearchPage } from "./search";
import { verifyAuditChain, type VerifyReport } from "./verify";

const AUDIT_LOG = { type: "audit_log" } as const;

export async function searchAudited(db: Db, actor: Actor, filters: AuditFilters, options: { after?: string | null } = {}): Promise<RunSearchPage> {
  requireScope(actor, "audit:read");
  const page = await searchRuns(db, filters, { after: options.after });
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor,
      action: "audit.searched",
      subject: AUDIT_LOG,
      data: { filters: filtersForRecord(filters), after: options.after ?? null, results: page.items.length, more: page.nextCursor !== null },
    }),
  );
  return page;
}

export async function viewRunTimelineAudited(db: Db, actor: Actor, runId: string): Promise<RunTimeline> {
  requireScope(actor, "audit:read");
  const timeline = await runTimeline(db, runId);
  if (!timeline) throw new AppError("not_found", "No run with that id.");
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor,
      action: "audit.viewed",
      subject: { type: "run", id: runId },
      data: { events: timeline.events.length, toolCalls: timeline.toolCalls.length },
    }),
  );
  return timeline;
}

export async function exportAudited(
  db: Db,
  actor: Actor,
  filters: AuditFilters,
  format: ExportFormat,
  options: { batchSize?: number } = {},
): Promise<PreparedExport> {
  requireScope(actor, "audit:export");
  const prepared = await prepareExport(db, filters, format, actorLabel(actor), options);
  const { manifest } = prepared;
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor,
      action: "audit.exported",
      subject: AUDIT_LOG,
      data: {
        format,
        filters: manifest.filters,
        scope: manifest.scope,
        rowCount: manifest.rowCount,
        firstEventId: manifest.firstEventId,
        lastEventId: manifest.lastEventId,
        chainHead: manifest.chainHead,
      },
    }),
  );
  return prepared;
}

export type VerificationOutcome = { report: VerifyReport; checkpointFile: string | null };

/**
 * Verifies the chain (from genesis, or from `from`), records the outcome, and — after a successful
 * verification of the whole chain — signs a checkpoint of the head.
 */
export async function runVerification(
  db: Db,
  actor: Actor,
  config: CheckpointConfig,
  options: { from?: bigint; now?: Date } = {},
): Promise<VerificationOutcome> {
  requireScope(actor, "audit:read");
  const report = await verifyAuditChain(db, { from: options.from, checkpoints: config, now: options.now });
  let checkpointFile: string | null = null;
  if (report.ok && options.from === undefined && report.head) checkpointFile = await checkpointIfNew(config, report.head);
  await record(db, actor, "audit.verified", report, checkpointFile);
  return { report, checkpointFile };
}

/**
 * For schedulers (`airlock audit checkpoint`, the run queue's cron): verifies everything after the
 * last valid checkpoint and signs the head if that holds. With no valid checkpoint it verifies the
 * whole chain and refuses (`checkpoints_missing`) when events older than the allowed gap exist,
 * unless `bootstrap` — an operator starting a new checkpoint directory or key, vouching for the
 * log as it is.
 */
export async function checkpointAudited(
  db: Db,
  actor: Actor,
  config: CheckpointConfig,
  options: { bootstrap?: boolean; now?: Date } = {},
): Promise<VerificationOutcome> {
  requireScope(actor, "audit:read");
  const checkpoints = await loadCheckpoints(config);
  const last = checkpoints.filter((c) => c.valid).at(-1);
  const from = last?.valid ? BigInt(last.checkpoint.eventId) : undefined;
  const bootstrap = from === undefined && options.bootstrap === true;
  const report = await verifyAuditChain(db, { from, checkpoints: config, allowUncovered: from !== undefined || bootstrap, now: options.now });
  const checkpointFile = report.ok && report.head ? await checkpointIfNew(config, report.head) : null;
  await record(db, actor, "audit.checkpointed", report, checkpointFile, bootstrap ? { bootstrap: true } : {});
  return { report, checkpointFile };
}

async function checkpointIfNew(config: CheckpointConfig, head: NonNullable<VerifyReport["head"]>): Promise<string | null> {
  const last = (await loadCheckpoints(config)).filter((c) => c.valid).at(-1);
  if (last?.valid && last.checkpoint.eventId === head.id) return null;
  return (await writeCheckpoint(config, head)).file;
}

async function record(db: Db, actor: Actor, action: string, report: VerifyReport, checkpointFile: string | null, extra: Record<string, unknown> = {}) {
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor,
      action,
      subject: AUDIT_LOG,
      data: {
        ok: report.ok,
        from: report.from,
        eventsChecked: report.eventsChecked,
        sealsChecked: report.sealsChecked,
        runsContentChecked: report.runsContentChecked,
        runsNotCovered: report.runsNotCovered,
        checkpointsChecked: report.checkpointsChecked,
        head: report.head,
        broken: report.broken,
        durationMs: report.durationMs,
        checkpointWritten: checkpointFile !== null,
        ...extra,
      },
    }),
  );
}
