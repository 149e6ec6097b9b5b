/**
 * Checks an audit export offline (JSONL, one row per event, as export.ts writes it): no database,
 * no network. The file is read line by line, so an export of a million events is checked in the
 * memory of a few runs.
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
 *    purged must be named by a run.purged event of that run in the file; a tool call kept
 *    truncated (over 64 KiB) cannot be recomputed, and the run's seal is noted unchecked.
 *
 * Not proven, and said so in every verdict: the names beside the ids (actorName, actorEmail,
 * subjectName), which the export reads from the user and agent directory when it is made, and a
 * tool call's phase and error text, which its seal does not cover.
 *
 * Every mismatch is reported, naming the event. Refuses (ExportFormatError, naming the line): a
 * file that is not such an export (a CSV or per-run export carries no hashes), a line that is not
 * strict JSON or is off the schema. Never throws on a file it parsed.
 */
import type { KeyObject } from "node:crypto";
import type { Readable } from "node:stream";
import { createInterface } from "node:readline";
import { z } from "zod";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import { strictJsonProblem } from "@/lib/untrusted/strict-json";
import { keyIdOf, treeHeadOf, type Checkpoint } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import { chainHash, GENESIS_HASH } from "./record";
import { RUN_PURGED } from "./run-content";
import { toolCallsDigest, type SealedCall } from "./seal";

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
type ExportEvent = z.infer<typeof eventSchema>;

const TERMINAL_ACTIONS = new Set(TERMINAL_STATUSES.map((status) => `run.${status}`));
const PURGED = /^purged on \d{4}-\d{2}-\d{2} by retention$/;

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
  return parseLine(text, 1, z.strictObject({ manifest: manifestSchema }), "the manifest of an events export (airlock.audit-export version 2)").manifest;
}

const label = (event: ExportEvent) => `event #${event.id} (${event.action})`;

/** The executor keeps `{truncated: true, bytes}` instead of a value over its size cap (stored-calls.ts). */
function isTruncationMarker(value: unknown): boolean {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const keys = Object.keys(value).sort();
  return keys.length === 2 && keys[0] === "bytes" && keys[1] === "truncated" && (value as { truncated: unknown }).truncated === true;
}

const isPurgedText = (value: unknown): boolean => typeof value === "string" && PURGED.test(value);

/** What one run's lines claim was purged (checked against its run.purged events at the end). */
type PurgeClaims = { fields: Map<string, string>; calls: Map<number, string>; purgedFields: Set<string>; purgedCalls: Set<number> };

class Checks {
  readonly problems: string[] = [];
  readonly notes: string[] = [];
  private readonly purges = new Map<string, PurgeClaims>();
  /** Each run's purpose digest, from its run.submitted event. */
  private readonly purposes = new Map<string, string>();
  private purposeUnchecked = 0;
  seals = 0;
  private uncheckableSeals = 0;

  private claimsOf(runId: string): PurgeClaims {
    let claims = this.purges.get(runId);
    if (!claims) this.purges.set(runId, (claims = { fields: new Map(), calls: new Map(), purgedFields: new Set(), purgedCalls: new Set() }));
    return claims;
  }

  /** A shown value against the digest its event carries; a purge notice is checked at the end. */
  private field(event: ExportEvent, runId: string, field: string, value: unknown): void {
    const digests = event.data.contentDigests as Record<string, unknown> | undefined;
    const digest = digests && typeof digests === "object" ? digests[field] : undefined;
    if (typeof digest !== "string") return;
    if (isPurgedText(value)) {
      this.claimsOf(runId).fields.set(field, label(event));
      return;
    }
    if (jsonDigest(value) !== digest) this.problems.push(`${label(event)}: the ${field} shown does not match the digest the event carries`);
  }

  run(event: ExportEvent): void {
    if (event.subjectType !== "run" || !event.subjectId) return;
    const runId = event.subjectId;
    if (event.action === RUN_PURGED) {
      const claims = this.claimsOf(runId);
      for (const field of Array.isArray(event.data.fields) ? event.data.fields : []) if (typeof field === "string") claims.purgedFields.add(field);
      for (const seq of Array.isArray(event.data.purgedToolCalls) ? event.data.purgedToolCalls : []) if (typeof seq === "number") claims.purgedCalls.add(seq);
    }
    if (event.action === "run.submitted") {
      this.field(event, runId, "code", event.code);
      this.field(event, runId, "purpose", event.purpose);
      const digests = event.data.contentDigests as Record<string, unknown> | undefined;
      if (typeof digests?.purpose === "string") this.purposes.set(runId, digests.purpose);
      if (
        typeof event.data.codeSha256 === "string" &&
        typeof event.code === "string" &&
        !isPurgedText(event.code) &&
        sha256Hex(event.code) !== event.data.codeSha256
      ) {
        this.problems.push(`${label(event)}: the code shown does not match the codeSha256 the event carries`);
      }
    } else {
      this.shownPurpose(event, runId);
    }
    if (TERMINAL_ACTIONS.has(event.action)) {
      this.field(event, runId, "result", event.result);
      this.field(event, runId, "error", event.error);
    }
    if (typeof event.data.toolCallsDigest === "string") this.seal(event, runId, event.data.toolCallsDigest);
  }

  /** The purpose every line of a run shows, against its submission's digest. */
  private shownPurpose(event: ExportEvent, runId: string): void {
    const digest = this.purposes.get(runId);
    if (digest === undefined) this.purposeUnchecked++;
    else if (isPurgedText(event.purpose)) this.claimsOf(runId).fields.set("purpose", label(event));
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
      if (isPurgedText(call.args) || isPurgedText(call.result)) {
        this.claimsOf(runId).calls.set(call.seq, label(event));
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
    } else if (toolCallsDigest(sealed) !== digest) {
      this.problems.push(`${label(event)}: the tool calls shown do not match the digest it seals`);
    } else {
      this.seals++;
    }
  }

  finish(): void {
    for (const [runId, claims] of this.purges) {
      for (const [field, where] of claims.fields) {
        if (!claims.purgedFields.has(field))
          this.problems.push(`${where}: the ${field} is shown as purged, but no run.purged event of run ${runId} in the file names it`);
      }
      for (const [seq, where] of claims.calls) {
        if (!claims.purgedCalls.has(seq))
          this.problems.push(`${where}: tool call ${seq} is shown as purged, but no run.purged event of run ${runId} in the file names it`);
      }
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
export async function verifyAuditExport(input: Readable, anchor: Anchor | null): Promise<ExportVerdict> {
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

  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
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
    last = event;
  }
  if (!manifest) throw new ExportFormatError("the file is empty; an audit export starts with its manifest");

  if (events !== manifest.rowCount) problems.push(`the manifest counts ${manifest.rowCount} event(s), the file holds ${events} (lines were added or removed)`);
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
  checks.finish();
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
