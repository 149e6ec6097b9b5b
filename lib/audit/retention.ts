/**
 * The retention job: purgeExpired(db, {asOf, days}) deletes the payloads whose window ended at
 * `asOf` (docs/audit.md, "Retention"; the windows are ./retention-windows.ts). The graphile-worker
 * cron runs it hourly (lib/runs/queue.ts); `airlock audit purge --as-of TIME` runs it for any past
 * instant.
 *
 * Guarantees:
 * - payloads are deleted, never replaced: a purged field holds NULL ('' for code and purpose, the
 *   provenance without its prompt and context, the execution without its logs), a purged tool
 *   call has NULL arguments and result, and an artifact blob loses its bytes once every run
 *   linking it has had its artifacts purged; the digests in the chain, on the tool calls and the
 *   blobs' sha256 stay;
 * - every purge goes through airlock_purge() (the only door, migration
 *   20261202100000_retention_purge_holds), which re-checks in the database that the run ended,
 *   that it is past the window given, that no legal hold covers the run or its agent, and that
 *   nothing is purged twice — and in the same transaction one `run.purged` event (actor
 *   system:retention) names the fields and tool calls purged, the classes and windows, `asOf`,
 *   and the digests of the purged fields as they are now (`contentDigests`), so `audit verify`
 *   accepts exactly these fields as changed;
 * - the run's search document is rebuilt from what is left;
 * - runs are taken in batches (keyset on createdAt, id), one transaction per run: a run refused
 *   by the database because a hold was placed meanwhile is counted and left as it was, and one
 *   another job purged first is skipped, so jobs may overlap (the cron, the CLI).
 *
 * Refuses an `asOf` in the future (bad_request). Only runs that ended are touched.
 */
import { RUN_PURGED, isRunContentField, storedContentDigests } from "./run-content";
import type { Actor } from "@/lib/contracts/scopes";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { recordAudit } from "./record";
import {
  LONGEST_WINDOW_FIELDS,
  SHORTEST_WINDOW_FIELDS,
  classDays,
  runWindows,
  windowOver,
  DAY_MS,
  type PurgeableField,
  type RetentionDays,
} from "./retention-windows";

export const RETENTION_ACTOR: Actor = Object.freeze({ type: "system", name: "retention" });
/** How often the queue's cron runs the job. */
export const RETENTION_CRON = "17 * * * *";

export type PurgeSummary = {
  asOf: string;
  /** Runs something was purged of. */
  runsPurged: number;
  fieldsPurged: number;
  toolCallsPurged: number;
  /** Runs past a window that a legal hold kept. */
  runsHeld: number;
  /** Personal-data tokens whose value was deleted. */
  tokensPurged: number;
};

type Candidate = {
  id: string;
  createdAt: Date;
  ended: Date;
  classes: unknown;
  purged: Record<string, unknown>;
  held: boolean;
  has: Record<PurgeableField, boolean>;
};

type CallCandidate = { runId: string; seq: number; dataClass: string | null };

async function candidates(db: Db, endedBy: Date, after: { createdAt: Date; id: string } | null, limit: number): Promise<Candidate[]> {
  const cursorAt = after?.createdAt ?? new Date(0);
  const cursorId = after?.id ?? "00000000-0000-0000-0000-000000000000";
  const rows = await db.$queryRaw<(Omit<Candidate, "has"> & Record<`has_${PurgeableField}`, boolean>)[]>`
    SELECT r.id::text AS id, r."createdAt", coalesce(r."finishedAt", r."updatedAt") AS ended,
           r.facts -> 'dataClasses' AS classes, r.purged,
           EXISTS (SELECT 1 FROM "LegalHold" h WHERE h."releasedAt" IS NULL AND (h."runId" = r.id OR h."agentId" = r."agentId")) AS held,
           true AS has_code, true AS has_purpose, r.javascript IS NOT NULL AS has_javascript,
           coalesce(r.provenance ?| array['prompt', 'context'], false) AS has_provenance,
           r.result IS NOT NULL AS has_result, r.error IS NOT NULL AS has_error, r.plan IS NOT NULL AS has_plan,
           EXISTS (SELECT 1 FROM "RunArtifact" a WHERE a."runId" = r.id) AS has_artifacts,
           CASE WHEN jsonb_typeof(r.execution -> 'logs') = 'array' THEN jsonb_array_length(r.execution -> 'logs') > 0 ELSE false END AS has_execution
    FROM "Run" r
    WHERE r.status::text = ANY(${TERMINAL_STATUSES as readonly string[]}::text[])
      AND NOT (r.purged ? 'code')
      AND r."createdAt" <= ${endedBy}
      AND coalesce(r."finishedAt", r."updatedAt") <= ${endedBy}
      AND (r."createdAt", r.id) > (${cursorAt}, ${cursorId}::uuid)
    ORDER BY r."createdAt", r.id
    LIMIT ${limit}`;
  return rows.map((row) => ({
    id: row.id,
    createdAt: row.createdAt,
    ended: row.ended,
    classes: row.classes,
    purged: row.purged,
    held: row.held,
    has: Object.fromEntries([...SHORTEST_WINDOW_FIELDS, ...LONGEST_WINDOW_FIELDS].map((field) => [field, row[`has_${field}`]])) as Record<
      PurgeableField,
      boolean
    >,
  }));
}

/** The unpurged tool calls of these runs, with their tool's class as the registry has it now. */
async function callCandidates(db: Db, runIds: string[]): Promise<Map<string, CallCandidate[]>> {
  const rows = runIds.length
    ? await db.$queryRaw<CallCandidate[]>`
        SELECT c."runId"::text AS "runId", c.seq, coalesce(t."dataClass", s."dataClass")::text AS "dataClass"
        FROM "RunToolCall" c
        LEFT JOIN "UpstreamServer" s ON s.name = c.server
        LEFT JOIN "UpstreamTool" t ON t."serverId" = s.id AND t.name = c.tool
        WHERE c."runId" = ANY(${runIds}::uuid[]) AND c."purgedAt" IS NULL AND (c.args IS NOT NULL OR c.result IS NOT NULL)
        ORDER BY c."runId", c.seq`
    : [];
  const byRun = new Map<string, CallCandidate[]>();
  for (const row of rows) byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row]);
  return byRun;
}

export type PurgePlan = {
  fields: PurgeableField[];
  toolCalls: number[];
  /** The smallest window among what is purged: every item is past it (airlock_purge re-checks it). */
  windowDays: number;
  classes: string[];
  shortestDays: number;
  longestDays: number;
};

/** What of one run is due at `asOf`, or null when nothing is. */
export function planPurge(
  days: RetentionDays,
  run: Pick<Candidate, "ended" | "classes" | "purged" | "has">,
  calls: CallCandidate[],
  asOf: Date,
): PurgePlan | null {
  const classes = Array.isArray(run.classes) ? run.classes.filter((c): c is string => typeof c === "string") : [];
  const windows = runWindows(days, classes);
  const longestOver = windowOver(run.ended, windows.longest, asOf);
  const due = (fields: readonly PurgeableField[]) => fields.filter((field) => run.has[field] && !Object.hasOwn(run.purged, field));
  const used: number[] = [];
  const fields: PurgeableField[] = [];
  if (windowOver(run.ended, windows.shortest, asOf)) {
    const short = due(SHORTEST_WINDOW_FIELDS);
    if (short.length) used.push(windows.shortest);
    fields.push(...short);
  }
  if (longestOver) {
    const long = due(LONGEST_WINDOW_FIELDS);
    if (long.length) used.push(windows.longest);
    fields.push(...long);
  }
  const toolCalls: number[] = [];
  for (const call of calls) {
    const callDays = longestOver ? Math.min(windows.longest, classDays(days, call.dataClass)) : classDays(days, call.dataClass);
    if (longestOver || windowOver(run.ended, callDays, asOf)) {
      toolCalls.push(call.seq);
      used.push(callDays);
    }
  }
  if (fields.length === 0 && toolCalls.length === 0) return null;
  return { fields, toolCalls, windowDays: Math.min(...used), classes: windows.classes, shortestDays: windows.shortest, longestDays: windows.longest };
}

/** Runs the job for `asOf`. */
export async function purgeExpired(db: Db, options: { asOf: Date; days: RetentionDays; batchSize?: number }): Promise<PurgeSummary> {
  const { asOf, days } = options;
  if (Number.isNaN(asOf.getTime()) || asOf.getTime() > Date.now()) {
    throw new AppError(
      "bad_request",
      `Retention runs as of a time that has passed, not ${Number.isNaN(asOf.getTime()) ? "an invalid time" : asOf.toISOString()}.`,
    );
  }
  const batchSize = options.batchSize ?? 200;
  const minDays = Math.min(days.default, ...Object.values(days));
  const endedBy = new Date(asOf.getTime() - minDays * DAY_MS);
  const summary: PurgeSummary = { asOf: asOf.toISOString(), runsPurged: 0, fieldsPurged: 0, toolCallsPurged: 0, runsHeld: 0, tokensPurged: 0 };
  let cursor: { createdAt: Date; id: string } | null = null;
  for (;;) {
    const batch = await candidates(db, endedBy, cursor, batchSize);
    if (batch.length === 0) break;
    const calls = await callCandidates(
      db,
      batch.map((run) => run.id),
    );
    for (const run of batch) {
      const plan = planPurge(days, run, calls.get(run.id) ?? [], asOf);
      if (!plan) continue;
      if (run.held) {
        summary.runsHeld++;
        continue;
      }
      const outcome = await purgeRun(db, run.id, plan, asOf);
      if (outcome === "held") summary.runsHeld++;
      if (outcome !== "purged") continue;
      summary.runsPurged++;
      summary.fieldsPurged += plan.fields.length;
      summary.toolCallsPurged += plan.toolCalls.length;
    }
    const last = batch[batch.length - 1]!;
    cursor = { createdAt: last.createdAt, id: last.id };
    if (batch.length < batchSize) break;
  }
  summary.tokensPurged = await purgeTokens(db, asOf, classDays(days, "pii"));
  return summary;
}

/**
 * Personal-data tokens (lib/runs/pii-tokens.ts) are personal data: a token's value is deleted when
 * the pii window has passed since it was last used and no run that used it still holds a result,
 * error, plan or logs — so no stored content still needs the value to be shown as its token, and a
 * held run keeps its tokens as it keeps its content. The token can no longer
 * be restored. One `pii_tokens.purged` event records how many, in the same transaction.
 */
async function purgeTokens(db: Db, asOf: Date, windowDays: number): Promise<number> {
  const before = new Date(asOf.getTime() - windowDays * DAY_MS);
  const scopes = await db.$queryRaw<{ scope: string }[]>`
    SELECT DISTINCT scope FROM "PiiToken" WHERE value IS NOT NULL AND "lastUsedAt" <= ${before}`;
  let total = 0;
  for (const { scope } of scopes) {
    // Under the scope's lock, as tokens are assigned (lib/runs/pii-tokens.ts): a run finishing in
    // this conversation meanwhile either sees the value deleted and keeps it again, or is seen using it.
    total += await db.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`airlock.pii:${scope}`}, 0))`;
      const purged = await tx.$executeRaw`
        UPDATE "PiiToken" t SET value = NULL, "purgedAt" = now()
        WHERE t.scope = ${scope} AND t.value IS NOT NULL AND t."lastUsedAt" <= ${before}
          AND NOT EXISTS (
            SELECT 1 FROM "PiiTokenUse" u JOIN "Run" r ON r.id = u."runId"
            WHERE u."tokenIds" @> ARRAY[t.id]
              AND (r.result IS NOT NULL OR r.error IS NOT NULL OR r.plan IS NOT NULL OR (r.execution IS NOT NULL AND NOT (r.purged ? 'execution'))))`;
      if (purged > 0) {
        await recordAudit(tx, {
          actor: RETENTION_ACTOR,
          action: "pii_tokens.purged",
          subject: { type: "pii_tokens", id: scope },
          data: { scope, tokens: purged, lastUsedBefore: before.toISOString(), windowDays, asOf: asOf.toISOString() },
        });
      }
      return purged;
    });
  }
  return total;
}

/**
 * One run: airlock_purge and its `run.purged` event, in one transaction. "held" when a hold was
 * placed since the run was selected, "raced" when another job purged it first; nothing changed then.
 */
async function purgeRun(db: Db, runId: string, plan: PurgePlan, asOf: Date): Promise<"purged" | "held" | "raced"> {
  try {
    await db.$transaction(async (tx) => {
      const [{ purgedAt }] = (await tx.$queryRaw<{ purgedAt: Date }[]>`
        SELECT "airlock_purge"(${runId}::uuid, ${plan.fields}::text[], ${plan.toolCalls}::integer[], ${asOf}, ${plan.windowDays}::integer) AS "purgedAt"`) as [
        { purgedAt: Date },
      ];
      await recordAudit(tx, {
        actor: RETENTION_ACTOR,
        action: RUN_PURGED,
        subject: { type: "run", id: runId },
        data: {
          asOf: asOf.toISOString(),
          purgedAt: purgedAt.toISOString(),
          fields: plan.fields,
          purgedToolCalls: plan.toolCalls,
          classes: plan.classes,
          windows: { shortestDays: plan.shortestDays, longestDays: plan.longestDays, appliedDays: plan.windowDays },
          contentDigests: await storedContentDigests(
            tx,
            runId,
            plan.fields.flatMap((field) => (isRunContentField(field) ? [field] : [])),
          ),
        },
      });
    });
    return "purged";
  } catch (error) {
    const message = (error as Error).message;
    if (message.includes("under a legal hold")) return "held";
    if (message.includes("already purged")) return "raced";
    throw error;
  }
}
