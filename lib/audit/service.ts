/**
 * The audited doors to the audit log: search, a run's timeline, export, run evidence, verification.
 * The console page, the export route, the server action and the CLI all call these; none of them
 * reads the log on its own.
 *
 * Guarantees:
 * - each function checks the actor's scope first (audit:read; export needs audit:export);
 * - every search, view, export and verification is itself an audit event ("audit.searched",
 *   "audit.viewed", "audit.exported", "audit.evidence_exported", "audit.verified",
 *   "audit.checkpointed") naming who looked at
 *   what; the event is written *before* results are handed back, and if it cannot be written the
 *   caller gets an error instead of the data (reading unaudited is not possible);
 * - the audit event is recorded after the read, in its own short transaction, so a slow search
 *   holds no transaction open.
 * - a checkpoint is signed only for a head that was just verified (whole chain, or everything
 *   after the last valid checkpoint) and only when the verification reported no problem at all —
 *   missing checkpoints included, so emptying the checkpoint directory is not healed by the next
 *   verification. The checkpoint job extends coverage (and the Merkle tree, from the checkpoint's
 *   frontier) from the newest valid checkpoint; with none, it signs only a log younger than the
 *   allowed gap, or when an operator asks for it (`bootstrap`, recorded in its audit event). When
 *   nothing was appended since the newest checkpoint it signs and records nothing; otherwise its
 *   `audit.checkpointed` event is written first and the checkpoint it announces covers it, so an
 *   idle log stays covered.
 */
import { sign } from "node:crypto";
import type { Actor } from "@/lib/contracts/scopes";
import { actorLabel, requireScope } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { loadCheckpoints, loadSigningKey, writeCheckpoint, type CheckpointConfig, type TreeState } from "./checkpoints";
import { buildRunEvidence } from "./evidence";
import { evidenceSignedPayload, type RunEvidence } from "./evidence-schema";
import { prepareExport, type ExportFormat, type ExportOptions, type PreparedExport } from "./export";
import { filtersForRecord, type AuditFilters } from "./filters";
import { runTimeline, type RunTimeline } from "./presenter";
import { recordAudit } from "./record";
import { searchRuns, type RunSearchPage } from "./search";
import { verifyAuditChain, type VerifyReport } from "./verify";

const AUDIT_LOG = { type: "audit_log" } as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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

export async function exportAudited(db: Db, actor: Actor, filters: AuditFilters, format: ExportFormat, options: ExportOptions = {}): Promise<PreparedExport> {
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
        rows: manifest.rows,
        filters: manifest.filters,
        scope: manifest.scope,
        auditReads: manifest.auditReads,
        rowCount: manifest.rowCount,
        firstEventId: manifest.firstEventId,
        lastEventId: manifest.lastEventId,
        chainHead: manifest.chainHead,
      },
    }),
  );
  return prepared;
}

/**
 * A run's evidence file (evidence.ts): first a checkpoint covering the run's last event (the
 * checkpoint job's work, so the tail since the last checkpoint is verified and signed), then the
 * file, then `audit.evidence_exported` naming who took it — before it is handed over. A log that
 * does not verify gets no evidence (conflict, naming the break).
 */
export async function exportEvidenceAudited(db: Db, actor: Actor, config: CheckpointConfig, runId: string): Promise<RunEvidence> {
  requireScope(actor, "audit:export");
  const known = UUID.test(runId) && (await db.run.findUnique({ where: { id: runId }, select: { id: true } }));
  if (!known) throw new AppError("not_found", "No run with that id.");
  const { report } = await signCheckpoint(db, actor, config);
  if (!report.ok) {
    throw new AppError("conflict", `The audit log does not verify (${report.broken?.reason} at event #${report.broken?.eventId}): no evidence can be signed.`, {
      details: { broken: report.broken },
    });
  }
  const unsigned = await buildRunEvidence(db, config, runId, actorLabel(actor));
  const key = await loadSigningKey(config.keyFile);
  const evidence: RunEvidence = {
    ...unsigned,
    fileSignature: { keyId: key.keyId, signature: sign(null, evidenceSignedPayload(unsigned), key.privateKey).toString("base64") },
  };
  const { treeHead, latestTreeHead } = evidence.proof;
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor,
      action: "audit.evidence_exported",
      subject: { type: "run", id: runId },
      data: {
        events: evidence.events.length,
        toolCalls: evidence.content.toolCalls.length,
        reviews: evidence.content.reviews.length,
        treeHead: { eventId: treeHead.eventId, treeSize: treeHead.treeSize, rootHash: treeHead.rootHash },
        latestTreeHead: { eventId: latestTreeHead.eventId, treeSize: latestTreeHead.treeSize, rootHash: latestTreeHead.rootHash },
      },
    }),
  );
  return evidence;
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
  if (report.ok && options.from === undefined && report.head && report.tree) checkpointFile = await checkpointIfNew(config, report.head, report.tree);
  await record(db, actor, "audit.verified", report, checkpointFile !== null);
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
  return signCheckpoint(db, actor, config, options);
}

/**
 * The checkpoint job, for callers that checked the actor's scope (evidence export signs one
 * before it proves anything). Nothing appended since the newest checkpoint: nothing is signed or
 * recorded. Otherwise, once the stretch since that checkpoint verifies, the `audit.checkpointed`
 * event is appended, the few events since the verified head (that one, and whatever else was
 * appended meanwhile) are verified on top of it, and the head after them is signed.
 */
export async function signCheckpoint(
  db: Db,
  actor: Actor,
  config: CheckpointConfig,
  options: { bootstrap?: boolean; now?: Date } = {},
): Promise<VerificationOutcome> {
  const last = (await loadCheckpoints(config)).filter((c) => c.valid).at(-1)?.checkpoint;
  // A version 1 checkpoint has no tree to extend: the whole chain is walked once to build it.
  const from = last?.version === 2 ? BigInt(last.eventId) : undefined;
  const bootstrap = last === undefined && options.bootstrap === true;
  const extra = bootstrap ? { bootstrap: true } : {};
  const report = await verifyAuditChain(db, { from, checkpoints: config, allowUncovered: last !== undefined || bootstrap, now: options.now });
  if (report.ok && last && report.head?.id === last.eventId) return { report, checkpointFile: null };
  if (!report.ok || !report.head || !report.tree) {
    await record(db, actor, "audit.checkpointed", report, false, extra);
    return { report, checkpointFile: null };
  }
  await record(db, actor, "audit.checkpointed", report, true, extra);
  const tail = await verifyAuditChain(db, {
    from: BigInt(report.head.id) + 1n,
    anchor: { hash: report.head.hash, tree: report.tree },
    checkpoints: null,
  });
  if (!tail.ok || !tail.head || !tail.tree) return { report: tail, checkpointFile: null };
  return { report, checkpointFile: (await writeCheckpoint(config, tail.head, tail.tree)).file };
}

async function checkpointIfNew(config: CheckpointConfig, head: NonNullable<VerifyReport["head"]>, tree: TreeState): Promise<string | null> {
  const last = (await loadCheckpoints(config)).filter((c) => c.valid).at(-1);
  if (last?.valid && last.checkpoint.eventId === head.id) return null;
  return (await writeCheckpoint(config, head, tree)).file;
}

/** `checkpointWritten`: a checkpoint of the verified head was signed — or, for the checkpoint job, is announced and will cover this event too. */
async function record(db: Db, actor: Actor, action: string, report: VerifyReport, checkpointWritten: boolean, extra: Record<string, unknown> = {}) {
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
        tree: report.tree ? { size: report.tree.size, rootHash: report.tree.root.toString("hex") } : null,
        broken: report.broken,
        durationMs: report.durationMs,
        checkpointWritten,
        ...extra,
      },
    }),
  );
}
