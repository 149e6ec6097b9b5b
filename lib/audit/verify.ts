/**
 * Verification of the audit log (docs/audit.md, "Verification").
 *
 * verifyAuditChain(db, {from?}) walks "AuditEvent" in id order, in batches (keyset on id, never
 * the whole table in memory: the batch it checks and the next, each with the tool calls and run rows
 * its events name, which are read while the batch before is checked), and checks, in one pass:
 * - the chain: each event's prevHash is the previous event's hash (GENESIS_HASH for the first),
 *   and its hash is sha256(prevHash || canonicalJson(event)) recomputed from the stored fields;
 * - tool-call seals: for each run event carrying data.toolCallsDigest, the digest recomputed from
 *   that run's "RunToolCall" rows (ordered by seq, lib/audit/seal.ts `toolCallsDigest`), the call
 *   count, and each stored argument/result against its own digest (unless stored truncated);
 *   after a full walk, tool calls that no event seals are a break too — unless their run is still
 *   in flight (not in a terminal state, lib/runs/states.ts): its terminal event seals them later
 *   (PostgreSQL searches for them while the walk runs, from the same start);
 * - run content: for each run event carrying data.contentDigests (lib/audit/run-content.ts), each
 *   field's digest recomputed from the run's row as it is now; the first run whose content differs
 *   is `run_content_mismatch`, naming the run and the field (or that the row is gone). Runs whose
 *   events carry no digests (stored before they existed) are not covered: a whole-chain walk
 *   counts them in `runsNotCovered` and reports nothing about them. A field retention purged
 *   (run-content.ts purgeRecords) no longer matches the digests before its purge: it is accepted
 *   only when the run has a purgedAt and a `run.purged` event after that digest names the field;
 *   the purge event digests what is left, which is checked like any other. Likewise a tool call's
 *   arguments and result, NULL with a purgedAt, pass only when a purge event names its seq;
 * - the run record (run-record.ts), after a whole walk: every run has its run.submitted event, and
 *   its agent, code hash, skills, decision, approvals required, reviewer role, policy version,
 *   capability set, facts, findings and status are what its events say; every review is one a
 *   run.reviewed event records (`unrecorded_run`, `run_record_mismatch`; PostgreSQL searches while
 *   the walk runs, as for unsealed tool calls). The decision's reasons are compared during the walk
 *   with the digest its decision event carries (also `run_record_mismatch`, for any walk);
 * - signed checkpoints (checkpoints.ts): every checkpoint file must verify with the configured key,
 *   and its event must still exist with the same hash — this is what catches a rewrite of the tail
 *   with recomputed hashes, or a truncated tail; and its signed tree head (version 2) must be the
 *   Merkle tree (merkle.ts) recomputed from the events up to it (`tree_head_mismatch`). The walk
 *   keeps the tree's frontier as it goes (about two hashes per event) and reports the tree at the
 *   head; a walk `from` an id has no tree until it crosses a checkpoint, whose frontier it adopts,
 *   or it continues an `anchor` its caller verified;
 * - that checkpoints exist: an event older than CHECKPOINT_MAX_UNCOVERED_MS (twice the checkpoint
 *   interval) that no valid checkpoint covers is reported as `checkpoints_missing` (an emptied
 *   checkpoint directory, or no checkpoint job running), after every other check, so a real break
 *   is named first. Only the checkpoint job, anchored on a valid checkpoint, may skip this
 *   (`allowUncovered`): extending signed coverage is its job.
 *
 * The result names the *first* broken event in id order and why. What it can and cannot pin down:
 * an edited field is named exactly (its hash no longer matches); a deleted event is named by its
 * successor (whose prevHash points at nothing); an inserted event is named itself when its
 * successor still links to the event before it; a rewritten tail is named by the first checkpoint
 * it crosses, with the previous matching checkpoint as the lower bound of where the rewrite began.
 * Ids are not expected to be contiguous (rolled-back appends leave gaps), so gaps alone are not
 * evidence. `from` trusts everything before that id (it anchors on the preceding event's hash).
 *
 * Read-only: it writes nothing; service.ts records the verification and writes checkpoints.
 */
import { Prisma } from "@/lib/generated/prisma/client";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import type { Db } from "@/lib/db";
import { sha256Hex } from "@/lib/digest";
import { toolCallsDigest } from "@/lib/audit/seal";
import { NEXT_STATES, isTerminal } from "@/lib/contracts/run-states";
import { CHECKPOINT_INTERVAL_MINUTES, CHECKPOINT_MAX_UNCOVERED_MS, loadCheckpoints, treeStateOf, type CheckpointConfig, type TreeState } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import { GENESIS_HASH } from "./record";
import { RUN_CONTENT_FIELDS, isRunContentField, purgeRecords, type PurgeRecord, type RunContentField } from "./run-content";
import { findRecordMismatch } from "./run-record";
import { artifactsProblem, loadArtifactEvidence, type ArtifactEvidence } from "./artifact-evidence";
import { isJsonbText } from "./jsonb-text";
import { isTruncationMarker } from "./stored-calls";
import { parsedCanonicalJson, parsedChainHash, parsedJsonDigest } from "./verify-digest";

export const BREAK_REASONS = [
  "hash_mismatch",
  "prev_hash_mismatch",
  "inserted_event",
  "genesis_mismatch",
  "tool_calls_mismatch",
  "tool_call_digest_mismatch",
  "unsealed_tool_calls",
  "run_content_mismatch",
  "run_record_mismatch",
  "unrecorded_run",
  "checkpoint_mismatch",
  "tree_head_mismatch",
  "checkpoint_missing_event",
  "checkpoint_beyond_head",
  "checkpoint_invalid",
  "checkpoints_missing",
] as const;
export type BreakReason = (typeof BREAK_REASONS)[number];

export type ChainBreak = {
  eventId: string | null;
  reason: BreakReason;
  detail: string;
  /** For run_content_mismatch and run_record_mismatch: the run, and the field that differs (absent when the row is gone); for unrecorded_run, the run. */
  run?: { id: string; field?: string };
};

export type VerifyReport = {
  ok: boolean;
  /** First event id checked; null for the whole chain from genesis. */
  from: string | null;
  eventsChecked: number;
  sealsChecked: number;
  toolCallsChecked: number;
  /** Runs whose content was compared with digests in their events. */
  runsContentChecked: number;
  /** Runs with no content digest in any event (stored before digests existed); null for a walk `from` an id. */
  runsNotCovered: number | null;
  checkpointsChecked: number;
  /** The last event checked (the chain head when ok). */
  head: { id: string; hash: string; at: string } | null;
  /** The Merkle tree over every event up to the head; null when the walk did not know it (see `anchor`). */
  tree: TreeState | null;
  broken: ChainBreak | null;
  startedAt: string;
  durationMs: number;
};

export type VerifyOptions = {
  from?: bigint;
  batchSize?: number;
  /** Where checkpoints are; null skips them (only for callers that check them elsewhere). */
  checkpoints: CheckpointConfig | null;
  /** Do not report `checkpoints_missing` (the checkpoint job, extending from a valid checkpoint). */
  allowUncovered?: boolean;
  /** The time old events are measured against; now by default. */
  now?: Date;
  /**
   * With `from`: the chain hash of the event before it and the tree over every event up to that
   * one, as the caller just verified; the walk continues them instead of trusting the database.
   */
  anchor?: { hash: string; tree: TreeState };
};

const TERMINAL_STATUSES: string[] = (Object.keys(NEXT_STATES) as (keyof typeof NEXT_STATES)[]).filter(isTerminal);

type EventRow = {
  id: bigint;
  /** ISO 8601 with milliseconds, exactly as Date.prototype.toISOString writes it. */
  at: string;
  actorType: string;
  actorId: string | null;
  action: string;
  subjectType: string;
  subjectId: string | null;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
};

/**
 * One batch of events. PostgreSQL renders each row as one JSON array text, so the walk costs a
 * JSON.parse per row instead of a driver conversion per column (measured ≈2× faster), and `at`
 * comes back already in toISOString form.
 */
async function fetchBatch(db: Db, cursor: bigint, limit: number): Promise<EventRow[]> {
  const rows = await db.$queryRaw<{ line: string }[]>`
    SELECT json_build_array(id::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           "actorType", "actorId", action, "subjectType", "subjectId", data, "prevHash", hash)::text AS line
    FROM "AuditEvent" WHERE id > ${cursor} ORDER BY id LIMIT ${limit}`;
  return rows.map(({ line }) => {
    const [id, at, actorType, actorId, action, subjectType, subjectId, data, prevHash, hash] = JSON.parse(line) as [
      string,
      string,
      string,
      string | null,
      string,
      string,
      string | null,
      Record<string, unknown>,
      string,
      string,
    ];
    return { id: BigInt(id), at, actorType, actorId, action, subjectType, subjectId, data, prevHash, hash };
  });
}

/** Whether an event seals its run's tool calls. */
function isSeal(row: EventRow): boolean {
  return row.subjectType === "run" && typeof row.data.toolCallsDigest === "string";
}

/** The content digests an event carries for its run, or null. */
function contentDigestsOf(row: EventRow): Record<string, unknown> | null {
  const digests = row.data.contentDigests;
  return row.subjectType === "run" && digests && typeof digests === "object" ? (digests as Record<string, unknown>) : null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The run an event names, lowercased as PostgreSQL writes a uuid (a subject that is not one names no row). */
function runIdOf(event: EventRow): string {
  return (event.subjectId ?? "").toLowerCase();
}

function runIdsOf(events: readonly EventRow[]): string[] {
  return [...new Set(events.map(runIdOf).filter((id) => UUID.test(id)))];
}

type CallRow = {
  runId: string;
  seq: number;
  server: string;
  tool: string;
  argsDigest: string;
  resultDigest: string | null;
  outcome: string;
  args: string | null;
  result: string | null;
  purged: boolean;
};

/** The "RunToolCall" rows of runs, by run, each run's in seq order. */
async function fetchCalls(db: Db, runIds: string[]): Promise<Map<string, CallRow[]>> {
  const byRun = new Map<string, CallRow[]>();
  if (runIds.length === 0) return byRun;
  const rows = await db.$queryRaw<CallRow[]>`
    SELECT "runId"::text AS "runId", seq, server, tool, "argsDigest", "resultDigest", outcome,
           args::text AS args, result::text AS result, "purgedAt" IS NOT NULL AS purged
    FROM "RunToolCall" WHERE "runId" = ANY(${runIds}::uuid[]) ORDER BY "runId", seq`;
  for (const row of rows) {
    const list = byRun.get(row.runId) ?? [];
    list.push(row);
    byRun.set(row.runId, list);
  }
  return byRun;
}

/**
 * A run's row as content verification reads it: each content column as the app reads it back
 * (text as a string, JSON as JSON.parse returns it, NULL as null), and each field's digest once
 * computed (several events of a run digest the same field).
 */
type RunRow = {
  id: string;
  purged: boolean;
  content: Record<RunContentField, unknown>;
  digests: Partial<Record<RunContentField, string>>;
  /** Not content, but digested by the decision event (`decisionReasonsDigest`). */
  decisionReasons: unknown;
};
type RunRows = { byId: Map<string, RunRow>; artifacts: Map<string, ArtifactEvidence[]> };

/** The id, whether retention purged the row, the content columns in RUN_CONTENT_FIELDS order, and the decision's reasons. */
const RUN_LINE = Prisma.raw(["id", `"purgedAt" IS NOT NULL`, ...RUN_CONTENT_FIELDS.map((field) => `"${field}"`), `"decisionReasons"`].join(", "));

/** The rows of runs, and their artifacts' evidence. Like fetchBatch, one JSON array text per row. */
async function fetchRuns(db: Db, ids: string[]): Promise<RunRows> {
  const byId = new Map<string, RunRow>();
  if (ids.length === 0) return { byId, artifacts: new Map() };
  const lines = await db.$queryRaw<{ line: string }[]>`
    SELECT json_build_array(${RUN_LINE})::text AS line FROM "Run" WHERE id = ANY(${ids}::uuid[])`;
  for (const { line } of lines) {
    const [id, purged, ...values] = JSON.parse(line) as [string, boolean, ...unknown[]];
    const content = Object.fromEntries(RUN_CONTENT_FIELDS.map((field, i) => [field, values[i]])) as Record<RunContentField, unknown>;
    byId.set(id, { id, purged, content, digests: {}, decisionReasons: values[RUN_CONTENT_FIELDS.length] });
  }
  const executed = [...byId.values()].filter((row) => row.content.execution !== null).map((row) => row.id);
  return { byId, artifacts: await loadArtifactEvidence(db, executed) };
}

function contentDigest(row: RunRow, field: RunContentField): string {
  return (row.digests[field] ??= parsedJsonDigest(row.content[field]));
}

/**
 * A batch of events and the rows its checks compare them with: the tool calls of the runs its seals
 * name, and the rows of the runs its content digests name. Those reads depend only on the events, so
 * they start as soon as the events arrive, and PostgreSQL answers them while the walk checks the
 * chain (and, one batch ahead, the batch before). They read every such run of the batch; the checks
 * use those of the events before a chain break. A walk that stops before a batch's checks never
 * awaits its reads, so their failures are marked handled here; awaited, they reject.
 */
type Batch = { rows: EventRow[]; calls: Promise<Map<string, CallRow[]>>; runs: Promise<RunRows> };

const NO_BATCH: Batch = { rows: [], calls: Promise.resolve(new Map()), runs: Promise.resolve({ byId: new Map(), artifacts: new Map() }) };

async function readBatch(db: Db, cursor: bigint, limit: number): Promise<Batch> {
  const rows = await fetchBatch(db, cursor, limit);
  const calls = fetchCalls(db, runIdsOf(rows.filter(isSeal)));
  const runs = fetchRuns(db, runIdsOf(rows.filter((row) => contentDigestsOf(row) !== null)));
  calls.catch(() => undefined);
  runs.catch(() => undefined);
  return { rows, calls, runs };
}

/** Steps of a check between two pauses (pacer): about 10 ms of work each. */
const EVENTS_PER_PAUSE = 1000;
const CALLS_PER_PAUSE = 100;

/**
 * A pause every `every` steps of a long check, to let the event loop run: the reads ahead of the
 * walk (readBatch) stream in only while their rows are taken off the socket, so a check that kept
 * the thread for a whole batch would stall PostgreSQL until it ended (measured: the walk then
 * waited for the tool calls about a quarter of its time).
 */
function pacer(every: number): () => Promise<void> | null {
  let steps = 0;
  return () => (++steps % every === 0 ? new Promise((resolve) => setImmediate(resolve)) : null);
}

/** The purge events of runs, read only for the runs whose rows differ from a digest. */
function purgeLookup(db: Db): (runId: string) => Promise<PurgeRecord[]> {
  const cache = new Map<string, Promise<PurgeRecord[]>>();
  return (runId) => {
    let records = cache.get(runId);
    if (!records) cache.set(runId, (records = purgeRecords(db, runId)));
    return records;
  };
}

/**
 * Whether a stored argument or result is what its digest covers. Only three texts are accepted,
 * each with one reading for every JSON reader (an export, the search index, a person):
 * - the canonical text itself, as the recorder stores it (./stored-calls.ts), which hashes to the
 *   digest as it is: no parse, no copy (about a quarter of a walk's time);
 * - jsonb's text of the digested value (./jsonb-text.ts), as rows stored before the text was kept
 *   read back: parsed, and its canonical form digested;
 * - the size cap's marker `{"bytes":n,"truncated":true}` in either form, naming a size n past the
 *   cap: the digest covers a value that was not kept, so nothing more can be checked (a value past
 *   the cap could be replaced by its marker unnoticed; a smaller one cannot).
 * Any other text — duplicate keys, another spacing or order, a number spelled another way — is a
 * mismatch even when it parses to the digested value.
 */
function storedValueMatches(stored: string | null, digest: string): boolean {
  if (stored === null) return parsedJsonDigest(null) === digest;
  if (sha256Hex(stored) === digest) return true;
  const value: unknown = JSON.parse(stored);
  if (isTruncationMarker(value)) return stored === parsedCanonicalJson(value) || isJsonbText(stored, value);
  return isJsonbText(stored, value) && parsedJsonDigest(value) === digest;
}

/** `calls` counts the tool calls of the sealed runs (each run once), as they were read. */
async function checkSeals(
  seals: { event: EventRow; data: Record<string, unknown> }[],
  byRun: Map<string, CallRow[]>,
  purges: (runId: string) => Promise<PurgeRecord[]>,
): Promise<{ broken: ChainBreak | null; calls: number }> {
  const read = runIdsOf(seals.map((s) => s.event)).reduce((sum, id) => sum + (byRun.get(id)?.length ?? 0), 0);
  const pace = pacer(CALLS_PER_PAUSE);
  for (const { event, data } of seals) {
    const calls = byRun.get(runIdOf(event)) ?? [];
    if (toolCallsDigest(calls) !== data.toolCallsDigest || (typeof data.toolCalls === "number" && data.toolCalls !== calls.length)) {
      return {
        broken: {
          eventId: event.id.toString(),
          reason: "tool_calls_mismatch",
          detail: `the ${calls.length} recorded tool call(s) of run ${event.subjectId} no longer match the digest sealed by event #${event.id} (${event.action})`,
        },
        calls: read,
      };
    }
    for (const call of calls) {
      const pause = pace();
      if (pause) await pause;
      const argsOk = storedValueMatches(call.args, call.argsDigest);
      const resultOk = call.resultDigest === null ? call.result === null : storedValueMatches(call.result, call.resultDigest);
      if (!argsOk || !resultOk) {
        const purgedByRetention =
          call.purged &&
          call.args === null &&
          call.result === null &&
          (await purges(call.runId)).some((p) => p.eventId > event.id && p.toolCalls.includes(call.seq));
        if (purgedByRetention) continue;
        return {
          broken: {
            eventId: event.id.toString(),
            reason: "tool_call_digest_mismatch",
            detail: `tool call #${call.seq} (${call.server}.${call.tool}) of run ${event.subjectId}: stored ${argsOk ? "result" : "arguments"} no longer match their digest`,
          },
          calls: read,
        };
      }
    }
  }
  return { broken: null, calls: read };
}

type ContentEvent = { event: EventRow; digests: Record<string, unknown> };

/** Compares each event's content digests with the run's row as it is now; the first difference, in event order. */
async function checkContent(
  events: ContentEvent[],
  runs: RunRows,
  covered: Set<string>,
  purges: (runId: string) => Promise<PurgeRecord[]>,
): Promise<ChainBreak | null> {
  for (const { event, digests } of events) {
    const runId = runIdOf(event);
    const row = runs.byId.get(runId);
    const at = { eventId: event.id.toString(), reason: "run_content_mismatch" as const };
    if (!row)
      return {
        ...at,
        run: { id: event.subjectId ?? "" },
        detail: `run ${event.subjectId}, whose content event #${event.id} (${event.action}) digests, is gone`,
      };
    covered.add(runId);
    for (const [field, digest] of Object.entries(digests)) {
      if (isRunContentField(field) && contentDigest(row, field) === digest) continue;
      if (row.purged && (await purges(row.id)).some((p) => p.eventId > event.id && p.fields.includes(field))) continue;
      return {
        ...at,
        run: { id: row.id, field },
        detail: `run ${row.id}: its ${field} no longer matches the digest in event #${event.id} (${event.action}); the row was changed after it was written`,
      };
    }
    const reasonsDigest = event.data.decisionReasonsDigest;
    if (typeof reasonsDigest === "string" && parsedJsonDigest(row.decisionReasons) !== reasonsDigest)
      return {
        eventId: event.id.toString(),
        reason: "run_record_mismatch",
        run: { id: row.id, field: "decisionReasons" },
        detail: `run ${row.id}: its decisionReasons are not the ones event #${event.id} (${event.action}) digests; the row was changed outside Airlock`,
      };
    // The sealed execution lists the run's artifacts: their rows and bytes must agree with it.
    const artifactsPurged = row.purged && (await purges(row.id)).some((p) => p.eventId >= event.id && p.fields.includes("artifacts"));
    const artifactProblem = "execution" in digests ? artifactsProblem(row.content.execution, runs.artifacts.get(row.id) ?? [], artifactsPurged) : null;
    if (artifactProblem)
      return { ...at, run: { id: row.id, field: "artifacts" }, detail: `run ${row.id}: ${artifactProblem} (sealed by event #${event.id}, ${event.action})` };
  }
  return null;
}

/** A run that is over (or gone) with tool calls that no audit event seals, if any. */
async function findUnsealed(db: Db): Promise<{ runId: string; status: string | null } | undefined> {
  // A run still in flight has tool calls its terminal event has not sealed yet.
  const [unsealed] = await db.$queryRaw<{ runId: string; status: string | null }[]>`
    SELECT DISTINCT t."runId"::text AS "runId", r.status::text AS status FROM "RunToolCall" t
    LEFT JOIN "Run" r ON r.id = t."runId"
    WHERE (r.id IS NULL OR r.status::text = ANY(${TERMINAL_STATUSES}::text[]))
      AND NOT EXISTS (
        SELECT 1 FROM "AuditEvent" e
        WHERE e."subjectType" = 'run' AND e."subjectId" = t."runId"::text AND e.data ->> 'toolCallsDigest' IS NOT NULL)
    LIMIT 1`;
  return unsealed;
}

function earlier(a: ChainBreak | null, b: ChainBreak | null): ChainBreak | null {
  if (!a) return b;
  if (!b) return a;
  if (a.eventId === null) return a;
  if (b.eventId === null) return b;
  return BigInt(b.eventId) < BigInt(a.eventId) ? b : a;
}

export async function verifyAuditChain(db: Db, options: VerifyOptions): Promise<VerifyReport> {
  await sequenceAudit(db);
  const startedAt = new Date();
  const t0 = performance.now();
  const batchSize = options.batchSize ?? 10_000;
  const report: VerifyReport = {
    ok: false,
    from: options.from !== undefined ? options.from.toString() : null,
    eventsChecked: 0,
    sealsChecked: 0,
    toolCallsChecked: 0,
    runsContentChecked: 0,
    runsNotCovered: null,
    checkpointsChecked: 0,
    head: null,
    tree: null,
    broken: null,
    startedAt: startedAt.toISOString(),
    durationMs: 0,
  };
  const done = (broken: ChainBreak | null) => {
    report.broken = broken;
    report.ok = broken === null;
    report.tree = broken === null && tree ? { size: tree.size, root: tree.root(), frontier: tree.frontier() } : null;
    report.durationMs = Math.round(performance.now() - t0);
    return report;
  };

  /** The Merkle tree over every event walked so far (unknown when starting `from` an id without an anchor). */
  let tree: CompactRange | null = CompactRange.empty();
  // Checkpoints first: a forged or foreign checkpoint file is itself a finding.
  const pending: { id: bigint; hash: string; at: string; tree: TreeState | null }[] = [];
  /** The newest event a valid checkpoint names (0 when there is none). */
  let covered = 0n;
  if (options.checkpoints) {
    for (const loaded of await loadCheckpoints(options.checkpoints)) {
      if (!loaded.valid) {
        return done({ eventId: loaded.eventId, reason: "checkpoint_invalid", detail: `${loaded.file}: ${loaded.problem}` });
      }
      const id = BigInt(loaded.checkpoint.eventId);
      if (id > covered) covered = id;
      if (options.from === undefined || id >= options.from) {
        pending.push({ id, hash: loaded.checkpoint.hash, at: loaded.checkpoint.at, tree: treeStateOf(loaded.checkpoint) });
      }
    }
  }
  let lastMatchedCheckpoint: bigint | null = null;

  // The anchor: genesis, or the (trusted) event just before `from`.
  let expectedPrev = GENESIS_HASH;
  let cursor = 0n;
  if (options.from !== undefined) {
    cursor = options.from - 1n;
    tree = options.anchor ? CompactRange.fromFrontier(options.anchor.tree.size, options.anchor.tree.frontier) : null;
    if (options.anchor) expectedPrev = options.anchor.hash;
    else {
      const before = await db.$queryRaw<{ id: bigint; hash: string }[]>`
        SELECT id, hash FROM "AuditEvent" WHERE id < ${options.from} ORDER BY id DESC LIMIT 1`;
      if (before[0]) expectedPrev = before[0].hash;
    }
  }
  let beforePrev: string | null = null;
  let previous: EventRow | null = null;
  const contentRuns = new Set<string>();
  const purges = purgeLookup(db);

  // Tool calls no event seals do not depend on the walk: PostgreSQL looks for them while it runs
  // (after the sequencing above, like the walk's first read). Only a whole walk without a break
  // reports them, so a walk that stops early never awaits the search, whose failure is marked handled.
  const unsealed = options.from === undefined ? findUnsealed(db) : null;
  unsealed?.catch(() => undefined);
  const misrecorded = options.from === undefined ? findRecordMismatch(db) : null;
  misrecorded?.catch(() => undefined);
  let next = readBatch(db, cursor, batchSize);
  for (;;) {
    const batch = await next;
    const { rows } = batch;
    if (rows.length === 0) break;
    // The next batch is read while this one is checked: it starts after this one's last id. A walk
    // that stops early never awaits it, so its failure is marked handled here.
    next = rows.length < batchSize ? Promise.resolve(NO_BATCH) : readBatch(db, rows[rows.length - 1]!.id, batchSize);
    next.catch(() => undefined);

    let chainBreak: ChainBreak | null = null;
    const pace = pacer(EVENTS_PER_PAUSE);
    const seals: { event: EventRow; data: Record<string, unknown> }[] = [];
    const content: ContentEvent[] = [];
    for (const row of rows) {
      const pause = pace();
      if (pause) await pause;
      while (pending[0] && pending[0].id < row.id) {
        const missing = pending.shift()!;
        chainBreak = {
          eventId: missing.id.toString(),
          reason: "checkpoint_missing_event",
          detail: `checkpoint of ${missing.at} names event #${missing.id}, which is no longer in the log (deleted)`,
        };
        break;
      }
      if (chainBreak) break;
      if (row.prevHash !== expectedPrev) {
        if (previous && beforePrev !== null && row.prevHash === beforePrev) {
          chainBreak = {
            eventId: previous.id.toString(),
            reason: "inserted_event",
            detail: `event #${previous.id} was inserted: its successor #${row.id} still links to the event before it`,
          };
        } else if (!previous && options.from === undefined) {
          chainBreak = { eventId: row.id.toString(), reason: "genesis_mismatch", detail: `the first event #${row.id} does not start from the genesis hash` };
        } else {
          chainBreak = {
            eventId: row.id.toString(),
            reason: "prev_hash_mismatch",
            detail: previous
              ? `event #${row.id} does not link to #${previous.id}: an event between them was deleted, or #${previous.id} was altered`
              : `event #${row.id} does not link to the event before it`,
          };
        }
        break;
      }
      const recomputed = parsedChainHash(row.prevHash, row);
      if (recomputed !== row.hash) {
        chainBreak = {
          eventId: row.id.toString(),
          reason: "hash_mismatch",
          detail: `event #${row.id} (${row.action}) was altered: its stored hash does not match its content`,
        };
        break;
      }
      tree?.append(eventLeafHash(row.hash));
      if (pending[0] && pending[0].id === row.id) {
        const checkpoint = pending.shift()!;
        report.checkpointsChecked++;
        if (checkpoint.hash !== row.hash) {
          chainBreak = {
            eventId: row.id.toString(),
            reason: "checkpoint_mismatch",
            detail: `event #${row.id} differs from the signed checkpoint of ${checkpoint.at}: the chain was rewritten ${
              lastMatchedCheckpoint !== null ? `after event #${lastMatchedCheckpoint}` : "at or before this event"
            } and its hashes recomputed`,
          };
          break;
        }
        if (checkpoint.tree && tree && (tree.size !== checkpoint.tree.size || !tree.root().equals(checkpoint.tree.root))) {
          chainBreak = {
            eventId: row.id.toString(),
            reason: "tree_head_mismatch",
            detail: `the signed tree head of ${checkpoint.at} (${checkpoint.tree.size} events, root ${checkpoint.tree.root.toString("hex")}) is not the tree of the events up to #${row.id} (${tree.size} events, root ${tree.root().toString("hex")})`,
          };
          break;
        }
        if (checkpoint.tree && !tree) tree = CompactRange.fromFrontier(checkpoint.tree.size, checkpoint.tree.frontier);
        lastMatchedCheckpoint = row.id;
      }
      if (isSeal(row)) seals.push({ event: row, data: row.data });
      const digests = contentDigestsOf(row);
      if (digests) content.push({ event: row, digests });
      report.eventsChecked++;
      report.head = { id: row.id.toString(), hash: row.hash, at: row.at };
      beforePrev = expectedPrev;
      expectedPrev = row.hash;
      previous = row;
    }

    const sealed = seals.length ? await checkSeals(seals, await batch.calls, purges) : { broken: null, calls: 0 };
    report.sealsChecked += seals.length;
    report.toolCallsChecked += sealed.calls;
    const contentBroken = content.length ? await checkContent(content, await batch.runs, contentRuns, purges) : null;
    report.runsContentChecked = contentRuns.size;
    const broken = earlier(earlier(chainBreak, sealed.broken), contentBroken);
    if (broken) return done(broken);
    if (rows.length < batchSize) break;
  }

  if (pending[0]) {
    const beyond = pending[0];
    return done({
      eventId: beyond.id.toString(),
      reason: "checkpoint_beyond_head",
      detail: `the signed checkpoint of ${beyond.at} names event #${beyond.id}, but the log ends at #${report.head?.id ?? "nothing"}: its tail was removed`,
    });
  }

  if (options.from === undefined) {
    report.runsNotCovered = (await db.run.count()) - contentRuns.size;
    const found = await unsealed;
    if (found) {
      const { runId, status } = found;
      return done({
        eventId: null,
        reason: "unsealed_tool_calls",
        detail: `run ${runId} (${status ?? "no such run"}) has tool calls that no audit event seals`,
      });
    }
    const mismatch = await misrecorded;
    if (mismatch) {
      const { runId, field, detail } = mismatch;
      return done(
        field === "events"
          ? { eventId: null, reason: "unrecorded_run", run: { id: runId }, detail }
          : { eventId: null, reason: "run_record_mismatch", run: { id: runId, field }, detail },
      );
    }
  }

  if (options.checkpoints && !options.allowUncovered) {
    const now = options.now ?? new Date();
    const [oldest] = await db.$queryRaw<{ id: bigint; at: Date }[]>`
      SELECT id, at FROM "AuditEvent" WHERE id > ${covered} ORDER BY id LIMIT 1`;
    if (oldest && now.getTime() - oldest.at.getTime() > CHECKPOINT_MAX_UNCOVERED_MS) {
      const minutes = Math.floor((now.getTime() - oldest.at.getTime()) / 60_000);
      return done({
        eventId: oldest.id.toString(),
        reason: "checkpoints_missing",
        detail:
          `no signed checkpoint covers event #${oldest.id} of ${oldest.at.toISOString()} (${minutes} minutes old) or any event after it` +
          `${covered > 0n ? ` (the newest checkpoint names #${covered})` : " (there is no checkpoint at all)"}; checkpoints are signed every ` +
          `${CHECKPOINT_INTERVAL_MINUTES} minutes, so the checkpoint directory ${options.checkpoints.dir} was emptied or the checkpoint job is not running` +
          (covered > 0n
            ? ""
            : `. If this log never had a checkpoint (a first start that did not come up, a new key or directory), an operator who trusts it as it is can sign the first one: npx airlock audit checkpoint --bootstrap`),
      });
    }
  }
  return done(null);
}
