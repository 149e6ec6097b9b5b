/**
 * Checks an audit export offline (JSONL, one row per event, as export.ts writes it): no database,
 * no network. The file is read line by line: its memory grows with the number of runs (a digest
 * and a few ids each), not with the file (a million events, 1.6 GB, in about a minute).
 *
 * What it proves, in order:
 * 1. the file is an events export: the manifest line (airlock.audit-export version 2), then exactly
 *    `rowCount` events in increasing id order, from `firstEventId` to `lastEventId`, each with the
 *    manifest's columns and no other, no key twice in one object (strict JSON);
 * 2. each event: its chain hash recomputed from its chained fields (time, actor, action, subject,
 *    data) and its prevHash (record.ts), so none of them was changed on its own;
 * 3. the chain: an event whose prevHash is the hash of the line before follows it in the log, and
 *    the log's first event follows genesis (64 zeros). Where an event follows another, the events
 *    between are not in the file (a filtered export): nothing here proves what they were. An
 *    export of every event (no filter, the log's own reads included) may have no such gap and
 *    must end at the manifest's chain head;
 * 4. with a checkpoint file and the public key (anchoring): the checkpoint is signed by the key,
 *    the file holds its event with the hash it signed, and every event from genesis to it follows
 *    the one before, so none of them was added, removed or changed since it was signed (and its
 *    signed Merkle tree is the tree of those events). Whoever rewrites the whole file, hashes
 *    recomputed, cannot sign a checkpoint for it without the key;
 * 5. what the export shows beside the events, against the digests they carry: a run's code
 *    (run.submitted: its content digest and codeSha256), its purpose on every line of the run
 *    (run.submitted's digest; noted when the file lacks that event), its result and error (a
 *    terminal event's content digests) and its tool calls (toolCallsDigest). A value shown as
 *    purged must be named by a run.purged event of that run in the file (noted when that event is
 *    after the checkpoint and the value before it: the chain alone protects it); a tool call kept
 *    truncated (over 64 KiB) cannot be recomputed, and the run's seal is noted unchecked. A run's
 *    content shown where export.ts writes none (beside an event not a run's, code beside another
 *    event than run.submitted, result or error beside a non-terminal one, tool calls beside no
 *    seal) is a mismatch.
 *
 * Not proven, and said so in every verdict: the names beside the ids (actorName, actorEmail,
 * subjectName), which the export reads from the user and agent directory when it is made, and a
 * tool call's phase and error text, which its seal does not cover.
 *
 * Every mismatch is reported, naming the event. Refuses (ExportFormatError, naming the line): a
 * file that is not such an export (a CSV or per-run export carries no hashes), a line that is not
 * strict JSON or is off the schema, a manifest whose columns are not an events export's, a line
 * longer than JavaScript's longest string (read in pieces, refused before it is built). Never
 * throws on a file it parsed.
 */
import type { KeyObject } from "node:crypto";
import type { Readable } from "node:stream";
import { constants } from "node:buffer";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import { strictJsonProblem } from "@/lib/untrusted/strict-json";
import { keyIdOf, treeHeadOf, type Checkpoint } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import { chainHash, GENESIS_HASH } from "./record";
import { RUN_PURGED, isPurgeNotice } from "./run-content";
import { toolCallsDigest, type SealedCall } from "./seal";
import { isTruncationMarker } from "./stored-calls";

export class ExportFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExportFormatError";
  }
}

export type ExportVerdict = {
  /** ok: every check passed and a signed checkpoint anchors the events up to it; unanchored: no checkpoint does. */
  status: "ok" | "unanchored" | "mismatch";
  problems: string[];
  notes: string[];
  events: number;
  /** Places where an event does not follow the line before (a filtered export). */
  gaps: number;
  /** The checkpoint's event, when it anchored the events up to it. */
  anchoredThrough: { eventId: string; signedAt: string; keyId: string } | null;
  toolCallSeals: number;
};

/** Deeper than any value Airlock stores (results and arguments are capped at 64 levels). */
const MAX_DEPTH = 256;
const HEX64 = z.string().regex(/^[0-9a-f]{64}$/);
const EVENT_ID = z.string().regex(/^[1-9]\d{0,18}$/);

const manifestSchema = z.strictObject({
  kind: z.literal("airlock.audit-export"),
  version: z.literal(2),
  format: z.literal("jsonl"),
  rows: z.literal("events"),
  exportedAt: z.string(),
  exportedBy: z.string(),
  filters: z.record(z.string(), z.string()),
  scope: z.enum(["all events", "events of matching runs"]),
  auditReads: z.enum(["included", "excluded"]),
  rowCount: z.number().int().min(0),
  firstEventId: EVENT_ID.nullable(),
  lastEventId: EVENT_ID.nullable(),
  timeRange: z.strictObject({ from: z.string().nullable(), to: z.string().nullable() }),
  chainHead: z.strictObject({ id: EVENT_ID, hash: HEX64, at: z.string() }).nullable(),
  columns: z.array(z.string()),
  timeZone: z.literal("UTC"),
});

const callSchema = z.strictObject({
  seq: z.number().int(),
  tool: z.string(),
  phase: z.string(),
  outcome: z.string(),
  args: z.unknown(),
  result: z.unknown(),
  error: z.string().nullable(),
});

const eventSchema = z.strictObject({
  id: EVENT_ID,
  at: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  actorType: z.string(),
  actorId: z.string().nullable(),
  actorName: z.string().nullable(),
  actorEmail: z.string().nullable(),
  action: z.string(),
  subjectType: z.string(),
  subjectId: z.string().nullable(),
  subjectName: z.string().nullable(),
  purpose: z.string().nullable(),
  code: z.string().nullable(),
  result: z.unknown(),
  error: z.unknown(),
  toolCalls: z.array(callSchema).nullable(),
  data: z.record(z.string(), z.unknown()),
  prevHash: HEX64,
  hash: HEX64,
});

type Manifest = z.infer<typeof manifestSchema>;

/** The columns export.ts writes, in its order. */
const EVENT_COLUMNS = Object.keys(eventSchema.shape);
/** The longest line read: JavaScript's longest string (a longer one would throw a RangeError mid-read). */
const MAX_LINE_CHARS = constants.MAX_STRING_LENGTH;
type ExportEvent = z.infer<typeof eventSchema>;

const TERMINAL_ACTIONS = new Set(TERMINAL_STATUSES.map((status) => `run.${status}`));

/** One line as strict JSON of `schema`, or an ExportFormatError naming the line. */
function parseLine<T>(text: string, lineNumber: number, schema: z.ZodType<T>, what: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ExportFormatError(`line ${lineNumber}: not JSON (${(error as Error).message})`);
  }
  const problem = strictJsonProblem(text, MAX_DEPTH);
  if (problem) throw new ExportFormatError(`line ${lineNumber}: ${problem}`);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ExportFormatError(`line ${lineNumber}: not ${what}: ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
  }
  return parsed.data;
}

function parseManifest(text: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ExportFormatError("line 1: not JSON; an audit export (airlock audit export --format jsonl) starts with its manifest");
  }
  const inner = raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as { manifest?: { rows?: unknown; format?: unknown } }).manifest : undefined;
  if (inner?.rows === "runs")
    throw new ExportFormatError("a per-run export (--per-run) carries no hashes; export the events (without --per-run) to verify them");
  if (inner?.format === "csv") throw new ExportFormatError("a CSV export cannot be verified; export --format jsonl");
  const manifest = parseLine(
    text,
    1,
    z.strictObject({ manifest: manifestSchema }),
    "the manifest of an events export (airlock.audit-export version 2)",
  ).manifest;
  if (manifest.columns.join(",") !== EVENT_COLUMNS.join(","))
    throw new ExportFormatError(`line 1: the manifest's columns are not those of an events export (${EVENT_COLUMNS.join(", ")})`);
  return manifest;
}

/**
 * The lines of `input` (LF or CRLF), one at a time. A line longer than MAX_LINE_CHARS is refused
 * (ExportFormatError) before it is built: readline would throw a RangeError from inside the stream.
 */
async function* linesOf(input: Readable, maxChars = MAX_LINE_CHARS): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8");
  let parts: string[] = [];
  let length = 0;
  let lineNumber = 1;
  const add = (piece: string) => {
    if (length + piece.length > maxChars)
      throw new ExportFormatError(`line ${lineNumber}: longer than ${maxChars} characters, more than any export writes on one line`);
    if (piece !== "") parts.push(piece);
    length += piece.length;
  };
  const take = () => {
    let line = parts.join("");
    if (line.endsWith("\r")) line = line.slice(0, -1);
    parts = [];
    length = 0;
    lineNumber++;
    return line;
  };
  for await (const chunk of input as AsyncIterable<string | Buffer>) {
    const text = typeof chunk === "string" ? chunk : decoder.write(chunk);
    let start = 0;
    for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", start)) {
      add(text.slice(start, newline));
      yield take();
      start = newline + 1;
    }
    add(text.slice(start));
  }
  add(decoder.end());
  if (length > 0) yield take();
}

const label = (event: ExportEvent) => `event #${event.id} (${event.action})`;

/**
 * A call that answered JSON null is stored as the text `null` with its digest, and the export shows
 * it as it shows no answer at all: a seal that does not match as shown is tried once with every
 * answered call's missing result read as that null (the same value shown, so nothing else can pass).
 */
const answeredNull = (call: SealedCall): SealedCall =>
  call.outcome === "ok" && call.resultDigest === null ? { ...call, resultDigest: jsonDigest(null) } : call;

/** Where a line shows a value as purged: its label and event id. */
type Claim = { where: string; id: bigint };
/**
 * What one run's lines claim was purged (checked against its run.purged events at the end), and
 * what its run.purged events name, with the first of them to name each.
 */
type PurgeClaims = { fields: Map<string, Claim>; calls: Map<number, Claim>; purgedFields: Map<string, bigint>; purgedCalls: Map<number, bigint> };

/** The columns of a run's content, which export.ts fills on a run's events only. */
const RUN_COLUMNS = ["purpose", "code", "result", "error", "toolCalls"] as const;
const shown = (value: unknown) => value !== null && value !== undefined;

class Checks {
  readonly problems: string[] = [];
  readonly notes: string[] = [];
  private readonly purges = new Map<string, PurgeClaims>();
  /** Each run's purpose digest, from its run.submitted event. */
  private readonly purposes = new Map<string, string>();
  private purposeUnchecked = 0;
  seals = 0;
  private uncheckableSeals = 0;
  /** Values shown whose event carries no digest of them (an event written before content digests). */
  private undigested = 0;

  private claimsOf(runId: string): PurgeClaims {
    let claims = this.purges.get(runId);
    if (!claims) this.purges.set(runId, (claims = { fields: new Map(), calls: new Map(), purgedFields: new Map(), purgedCalls: new Map() }));
    return claims;
  }

  /** A shown value against the digest its event carries; a purge notice is checked at the end. */
  private field(event: ExportEvent, runId: string, field: string, value: unknown): void {
    const digests = event.data.contentDigests as Record<string, unknown> | undefined;
    const digest = digests && typeof digests === "object" ? digests[field] : undefined;
    if (typeof digest !== "string") {
      if (shown(value) && !(field === "code" && typeof event.data.codeSha256 === "string")) this.undigested++;
      return;
    }
    if (isPurgeNotice(value)) {
      this.claimsOf(runId).fields.set(field, { where: label(event), id: BigInt(event.id) });
      return;
    }
    if (jsonDigest(value) !== digest) this.problems.push(`${label(event)}: the ${field} shown does not match the digest the event carries`);
  }

  run(event: ExportEvent): void {
    if (event.subjectType !== "run" || !event.subjectId) {
      // export.ts shows a run's content beside a run's events only: anything here was added to the file.
      const added = RUN_COLUMNS.filter((column) => shown(event[column]));
      if (added.length > 0) this.problems.push(`${label(event)}: shows a run's ${added.join(", ")}, but it is not a run's event (an export shows none there)`);
      return;
    }
    const runId = event.subjectId;
    const terminal = TERMINAL_ACTIONS.has(event.action);
    const added = [
      ...(event.action !== "run.submitted" && shown(event.code) ? ["code (an export shows it on run.submitted only)"] : []),
      ...(!terminal && (shown(event.result) || shown(event.error)) ? ["result or error (an export shows them on a run's terminal event only)"] : []),
      ...(!Object.hasOwn(event.data, "toolCallsDigest") && shown(event.toolCalls) ? ["tool calls (an export shows them beside a seal only)"] : []),
    ];
    for (const what of added) this.problems.push(`${label(event)}: shows ${what}: they were added to the file`);
    if (event.action === RUN_PURGED) {
      const claims = this.claimsOf(runId);
      const id = BigInt(event.id);
      for (const field of Array.isArray(event.data.fields) ? event.data.fields : [])
        if (typeof field === "string" && !claims.purgedFields.has(field)) claims.purgedFields.set(field, id);
      for (const seq of Array.isArray(event.data.purgedToolCalls) ? event.data.purgedToolCalls : [])
        if (typeof seq === "number" && !claims.purgedCalls.has(seq)) claims.purgedCalls.set(seq, id);
    }
    if (event.action === "run.submitted") {
      this.field(event, runId, "code", event.code);
      this.field(event, runId, "purpose", event.purpose);
      const digests = event.data.contentDigests as Record<string, unknown> | undefined;
      if (typeof digests?.purpose === "string") this.purposes.set(runId, digests.purpose);
      if (
        typeof event.data.codeSha256 === "string" &&
        typeof event.code === "string" &&
        !isPurgeNotice(event.code) &&
        sha256Hex(event.code) !== event.data.codeSha256
      ) {
        this.problems.push(`${label(event)}: the code shown does not match the codeSha256 the event carries`);
      }
    } else {
      this.shownPurpose(event, runId);
    }
    if (terminal) {
      this.field(event, runId, "result", event.result);
      this.field(event, runId, "error", event.error);
    }
    if (typeof event.data.toolCallsDigest === "string") this.seal(event, runId, event.data.toolCallsDigest);
  }

  /** The purpose every line of a run shows, against its submission's digest. */
  private shownPurpose(event: ExportEvent, runId: string): void {
    const digest = this.purposes.get(runId);
    if (digest === undefined) this.purposeUnchecked++;
    else if (isPurgeNotice(event.purpose)) this.claimsOf(runId).fields.set("purpose", { where: label(event), id: BigInt(event.id) });
    else if (jsonDigest(event.purpose) !== digest) this.problems.push(`${label(event)}: the purpose shown is not the one its run was submitted with`);
  }

  private seal(event: ExportEvent, runId: string, digest: string): void {
    const calls = event.toolCalls;
    if (!calls) {
      this.problems.push(`${label(event)}: seals tool calls, but the line shows none`);
      return;
    }
    const sealed: SealedCall[] = [];
    let checkable = true;
    for (const call of calls) {
      const dot = call.tool.indexOf(".");
      if (isPurgeNotice(call.args) || isPurgeNotice(call.result)) {
        this.claimsOf(runId).calls.set(call.seq, { where: label(event), id: BigInt(event.id) });
        checkable = false;
        continue;
      }
      if (isTruncationMarker(call.args) || isTruncationMarker(call.result)) checkable = false;
      sealed.push({
        seq: call.seq,
        server: call.tool.slice(0, dot),
        tool: call.tool.slice(dot + 1),
        argsDigest: jsonDigest(call.args),
        resultDigest: call.result === null || call.result === undefined ? null : jsonDigest(call.result),
        outcome: call.outcome,
      });
    }
    if (typeof event.data.toolCalls === "number" && event.data.toolCalls !== calls.length) {
      this.problems.push(`${label(event)}: it seals ${event.data.toolCalls} tool call(s), the line shows ${calls.length}`);
    } else if (!checkable) {
      this.uncheckableSeals++;
    } else if (toolCallsDigest(sealed) !== digest && toolCallsDigest(sealed.map(answeredNull)) !== digest) {
      this.problems.push(`${label(event)}: the tool calls shown do not match the digest it seals`);
    } else {
      this.seals++;
    }
  }

  /** `anchoredThrough`: the checkpoint's event, when it anchored the events up to it. */
  finish(anchoredThrough: string | null): void {
    const anchor = anchoredThrough === null ? null : BigInt(anchoredThrough);
    /** Lines up to the checkpoint that show a value as purged on the word of a run.purged event after it. */
    const unanchoredPurges: string[] = [];
    const check = (claim: Claim, purgedBy: bigint | undefined, what: string, runId: string) => {
      if (purgedBy === undefined)
        this.problems.push(`${claim.where}: ${what} is shown as purged, but no run.purged event of run ${runId} in the file names it`);
      else if (anchor !== null && claim.id <= anchor && purgedBy > anchor) unanchoredPurges.push(`${claim.where}: ${what}`);
    };
    for (const [runId, claims] of this.purges) {
      for (const [field, claim] of claims.fields) check(claim, claims.purgedFields.get(field), `the ${field}`, runId);
      for (const [seq, claim] of claims.calls) check(claim, claims.purgedCalls.get(seq), `tool call ${seq}`, runId);
    }
    if (unanchoredPurges.length > 0) {
      this.notes.push(
        `${unanchoredPurges.length} value(s) up to #${anchoredThrough} are shown as purged on the word of run.purged events after it, which the hash chain alone protects (${unanchoredPurges.slice(0, 5).join("; ")}${unanchoredPurges.length > 5 ? "; …" : ""})`,
      );
    }
    if (this.undigested > 0) {
      this.notes.push(`${this.undigested} value(s) of runs shown beside events that carry no digest of them: not checked`);
    }
    if (this.purposeUnchecked > 0) {
      this.notes.push(`${this.purposeUnchecked} line(s) show a run's purpose whose submission is not in the file: not checked`);
    }
    this.notes.push("not proven by the log: the names beside the ids (read from the directory when the file was made) and tool calls' phase and error text");
    if (this.uncheckableSeals > 0) {
      this.notes.push(`${this.uncheckableSeals} tool-call seal(s) not recomputed: a call's arguments or result were purged or kept truncated (over 64 KiB)`);
    }
  }
}

/** The checkpoint that anchors the file, already checked against the public key (checkCheckpoint). */
export type Anchor = { checkpoint: Checkpoint; publicKey: KeyObject };

/** Verifies the export read from `input`; with `anchor`, ties the events up to its checkpoint to the signing key. */
export async function verifyAuditExport(input: Readable, anchor: Anchor | null, lineLimit = MAX_LINE_CHARS): Promise<ExportVerdict> {
  const checks = new Checks();
  const { problems, notes } = checks;
  let manifest: Manifest | null = null;
  let lineNumber = 0;
  let events = 0;
  let gaps = 0;
  let last: ExportEvent | null = null;
  /** Every line so far follows the one before, the first one genesis. */
  let fromGenesis = true;
  const tree = CompactRange.empty();
  let anchorSeen = false;
  let anchoredThrough: ExportVerdict["anchoredThrough"] = null;

  let first: ExportEvent | null = null;
  for await (const text of linesOf(input, lineLimit)) {
    lineNumber++;
    if (!manifest) {
      manifest = parseManifest(text);
      continue;
    }
    if (text === "") throw new ExportFormatError(`line ${lineNumber}: empty (an export has one event per line)`);
    const event = parseLine(text, lineNumber, eventSchema, "an audit event of the export");
    events++;
    if (last && BigInt(event.id) <= BigInt(last.id)) throw new ExportFormatError(`line ${lineNumber}: event #${event.id} is not after #${last.id}`);
    const at = new Date(event.at);
    const recomputed = Number.isNaN(at.getTime()) || at.toISOString() !== event.at ? null : chainHash(event.prevHash, { ...event, at });
    if (recomputed !== event.hash) problems.push(`${label(event)}: its hash does not match its fields (the event was changed)`);
    if (event.prevHash !== (last ? last.hash : GENESIS_HASH)) {
      gaps++;
      fromGenesis = false;
    }
    if (fromGenesis) tree.append(eventLeafHash(event.hash));
    if (anchor && event.id === anchor.checkpoint.eventId) {
      anchorSeen = true;
      anchoredThrough = anchorAt(event, anchor, fromGenesis, tree, problems, notes);
    }
    checks.run(event);
    first ??= event;
    last = event;
  }
  if (!manifest) throw new ExportFormatError("the file is empty; an audit export starts with its manifest");

  if (events !== manifest.rowCount) problems.push(`the manifest counts ${manifest.rowCount} event(s), the file holds ${events} (lines were added or removed)`);
  if ((first?.id ?? null) !== manifest.firstEventId)
    problems.push(`the manifest's first event is #${manifest.firstEventId ?? "none"}, the file's is #${first?.id ?? "none"}`);
  if ((last?.id ?? null) !== manifest.lastEventId)
    problems.push(`the manifest's last event is #${manifest.lastEventId ?? "none"}, the file's is #${last?.id ?? "none"}`);
  const head = manifest.chainHead;
  const whole = manifest.scope === "all events" && manifest.auditReads === "included" && Object.keys(manifest.filters).length === 0;
  if (whole && (!fromGenesis || last?.id !== head?.id || last?.hash !== head?.hash)) {
    problems.push(
      `the export is of every event, but the file is not the whole log from genesis to the head its manifest names (#${head?.id ?? "none"}): events are missing, were added or were changed`,
    );
  }
  if (!whole && gaps > 0) notes.push(`filtered export: ${gaps} place(s) where events of the log are left out; nothing here proves what they were`);
  if (anchor && !anchorSeen) {
    notes.push(`the checkpoint names event #${anchor.checkpoint.eventId}, which this file does not hold: give the checkpoint of an event it holds`);
  }
  if (anchoredThrough && last && last.id !== anchoredThrough.eventId) {
    notes.push(`the events after #${anchoredThrough.eventId} are protected by the hash chain only (the checkpoint given does not cover them)`);
  }
  checks.finish(anchoredThrough?.eventId ?? null);
  const status = problems.length > 0 ? "mismatch" : anchoredThrough ? "ok" : "unanchored";
  return { status, problems, notes, events, gaps, anchoredThrough, toolCallSeals: checks.seals };
}

/** At the checkpoint's event: whether the checkpoint anchors every event up to it. */
function anchorAt(
  event: ExportEvent,
  anchor: Anchor,
  fromGenesis: boolean,
  tree: CompactRange,
  problems: string[],
  notes: string[],
): ExportVerdict["anchoredThrough"] {
  const { checkpoint } = anchor;
  if (event.hash !== checkpoint.hash) {
    problems.push(`${label(event)}: its hash differs from the one the checkpoint of ${checkpoint.signedAt} signed (the log was rewritten)`);
    return null;
  }
  if (!fromGenesis) {
    notes.push(`the checkpoint's event #${event.id} is in the file, but not every event before it (a filtered export): only that event is anchored`);
    return null;
  }
  const head = treeHeadOf(checkpoint);
  if (head && (tree.size !== head.treeSize || tree.root().toString("hex") !== head.rootHash)) {
    problems.push(`the events up to #${event.id} are not the tree the checkpoint of ${checkpoint.signedAt} signed (${head.treeSize} events)`);
    return null;
  }
  return { eventId: event.id, signedAt: checkpoint.signedAt, keyId: keyIdOf(anchor.publicKey) };
}
