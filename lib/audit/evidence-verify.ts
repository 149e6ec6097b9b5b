/**
 * Checks a run evidence file (evidence-schema.ts) offline: no database, no network, no clock.
 *
 * What it proves, in order:
 * 1. the tree heads and the file: signed by the given public key (its key id and the Ed25519
 *    signature of each head and of the whole file), and the consistency proof shows the latest
 *    head extends the one the events are proven against. Without a key the signatures are not
 *    checked and the verdict is UNANCHORED: the file is consistent with itself, which anyone
 *    could have made so;
 * 2. each event: its chain hash recomputed from its fields (record.ts) and its inclusion proof to
 *    the signed tree head (merkle.ts) at its leaf index; each is about this run, in id order;
 * 3. the content against the proven events: every `contentDigests` field of every event
 *    (run-content.ts) against the digest of the content field — unless a later `run.purged`
 *    event names it; the tool calls against the seal of the latest event carrying
 *    `toolCallsDigest` (seal.ts), and each call's arguments and result against its own digests
 *    (a purged call must be named by a `run.purged` event); each review against its
 *    `run.reviewed` event (verdict, comment, and name and email when the event records them),
 *    and every such event against a review; the policy text, decision and reasons against the
 *    decision event; the outcomes against the `run.outcome_recorded` events; the run's status
 *    against its latest state event.
 *
 * Every mismatch is reported, each naming the value and the event it contradicts (for example
 * `tool call 3 arguments: digest does not match the sealed digest`). What the chain does not
 * cover (content of runs stored before digests existed, reviewer names before events carried
 * them) is listed as notes, not as mismatches.
 *
 * Refuses a file that is not JSON, gives a key twice in one object (JSON.parse would keep only
 * the last, while another reader may show the first), nests deeper than EVIDENCE_MAX_DEPTH, or is
 * not exactly the schema (`EvidenceFormatError`, naming the first offending path). Never throws
 * on a file it parsed: a check that cannot be computed is a mismatch.
 */
import { verify, type KeyObject } from "node:crypto";
import { canonicalJson } from "@/lib/canonical-json";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { keyIdOf, treeHeadSignatureValid, type TreeHead } from "./checkpoints";
import { evidenceSignedPayload, runEvidenceSchema, type EvidenceEvent, type RunEvidence } from "./evidence-schema";
import { eventLeafHash, verifyConsistency, verifyInclusion } from "./merkle";
import { statusOfAction } from "@/lib/contracts/run-states";
import { strictJsonProblem } from "@/lib/untrusted/strict-json";
import { chainHash } from "./record";
import { RUN_CONTENT_FIELDS, RUN_PURGED, isRunContentField } from "./run-content";
import { toolCallsDigest } from "./seal";
import { isTruncationMarker } from "./stored-calls";

export class EvidenceFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvidenceFormatError";
  }
}

export type EvidenceVerdict = {
  /** ok: every check passed and the heads are signed by the key; unanchored: no key was given. */
  status: "ok" | "unanchored" | "mismatch";
  problems: string[];
  notes: string[];
  evidence: RunEvidence;
};

/** Deeper than any value Airlock stores (results and arguments are capped at 64 levels). */
export const EVIDENCE_MAX_DEPTH = 256;

/** Parses the file's text with the closed schema. */
export function parseEvidence(text: string): RunEvidence {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new EvidenceFormatError(`not JSON: ${(error as Error).message}`);
  }
  const problem = strictJsonProblem(text, EVIDENCE_MAX_DEPTH);
  if (problem) throw new EvidenceFormatError(`not a run evidence file: ${problem}`);
  const parsed = runEvidenceSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EvidenceFormatError(`not a run evidence file (airlock.run-evidence version 1): ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
  }
  return parsed.data;
}

const buffers = (hashes: readonly string[]) => hashes.map((h) => Buffer.from(h, "hex"));
const label = (event: EvidenceEvent) => `event #${event.id} (${event.action})`;

function fileSignatureValid(unsigned: Omit<RunEvidence, "fileSignature">, signature: string, publicKey: KeyObject): boolean {
  try {
    return verify(null, evidenceSignedPayload(unsigned), publicKey, Buffer.from(signature, "base64"));
  } catch {
    return false;
  }
}

function checkHeads(evidence: RunEvidence, publicKey: KeyObject | null, problems: string[]): void {
  const { treeHead, latestTreeHead, consistencyProof } = evidence.proof;
  if (publicKey) {
    const keyId = keyIdOf(publicKey);
    for (const [name, head] of [
      ["tree head", treeHead],
      ["latest tree head", latestTreeHead],
    ] as [string, TreeHead][]) {
      if (head.keyId !== keyId) problems.push(`${name} (size ${head.treeSize}): signed by another key (${head.keyId}, the given key is ${keyId})`);
      else if (!treeHeadSignatureValid(head, publicKey)) problems.push(`${name} (size ${head.treeSize}): signature does not verify`);
    }
    const { fileSignature, ...unsigned } = evidence;
    if (fileSignature.keyId !== keyId) problems.push(`the file: signed by another key (${fileSignature.keyId}, the given key is ${keyId})`);
    else if (!fileSignatureValid(unsigned, fileSignature.signature, publicKey)) {
      problems.push(`the file: its signature does not verify (a value was changed after it was exported)`);
    }
  }
  const root = (head: TreeHead) => Buffer.from(head.rootHash, "hex");
  if (!verifyConsistency(treeHead.treeSize, latestTreeHead.treeSize, root(treeHead), root(latestTreeHead), buffers(consistencyProof))) {
    problems.push(`consistency proof from tree size ${treeHead.treeSize} to ${latestTreeHead.treeSize}: does not verify`);
  }
}

function checkEvents(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[]): void {
  const head = evidence.proof.treeHead;
  const root = Buffer.from(head.rootHash, "hex");
  let previous: EvidenceEvent | null = null;
  for (const event of evidence.events) {
    if (previous && (BigInt(event.id) <= BigInt(previous.id) || event.leafIndex <= previous.leafIndex)) {
      problems.push(`${label(event)}: out of order (events must be in id and leaf order)`);
    }
    previous = event;
    if (event.subjectType !== "run" || event.subjectId !== evidence.run.id) problems.push(`${label(event)}: not about run ${evidence.run.id}`);
    const at = new Date(event.at);
    const recomputed = Number.isNaN(at.getTime()) || at.toISOString() !== event.at ? null : chainHash(event.prevHash, { ...event, at });
    if (recomputed !== event.hash) {
      problems.push(`${label(event)}: its hash does not match its content (the event was changed)`);
      continue;
    }
    if (!verifyInclusion(eventLeafHash(event.hash), event.leafIndex, head.treeSize, buffers(event.inclusionProof), root)) {
      problems.push(`${label(event)}: not included in the signed tree head (size ${head.treeSize}) at leaf ${event.leafIndex}`);
    }
  }
}

/** Is `field` (or tool call `seq`) named by a `run.purged` event after `after`? */
function purgedAfter(events: readonly EvidenceEvent[], after: EvidenceEvent, what: { field?: string; seq?: number }): boolean {
  return events.some((e) => {
    if (e.action !== RUN_PURGED || BigInt(e.id) <= BigInt(after.id)) return false;
    const list = (value: unknown) => (Array.isArray(value) ? value : []);
    return what.field !== undefined ? list(e.data.fields).includes(what.field) : list(e.data.purgedToolCalls).includes(what.seq);
  });
}

function checkRunContent(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[], notes: string[]): void {
  const { content, events } = evidence;
  const covered = new Set<string>();
  for (const event of events) {
    const digests = event.data.contentDigests;
    if (!digests || typeof digests !== "object" || Array.isArray(digests)) continue;
    for (const [field, digest] of Object.entries(digests)) {
      if (!isRunContentField(field)) {
        problems.push(`${label(event)}: digests an unknown field "${field}"`);
        continue;
      }
      covered.add(field);
      if (jsonDigest(content[field]) === digest || purgedAfter(events, event, { field })) continue;
      problems.push(`${field}: digest does not match ${label(event)}`);
    }
  }
  const submitted = events.find((e) => e.action === "run.submitted");
  if (submitted && typeof submitted.data.codeSha256 === "string" && typeof content.code === "string" && !content.purged.code) {
    if (sha256Hex(content.code) !== submitted.data.codeSha256) problems.push(`code: sha256 does not match ${label(submitted)}`);
  }
  const uncovered = RUN_CONTENT_FIELDS.filter((field) => !covered.has(field));
  if (uncovered.length > 0) notes.push(`not digested by any event (stored before content digests existed): ${uncovered.join(", ")}`);
  for (const [field, at] of Object.entries(content.purged)) notes.push(`${field}: purged on ${at.slice(0, 10)} by retention`);
  if (submitted?.actorType === "agent" && submitted.actorId !== evidence.run.agentId) {
    problems.push(`run agent: ${evidence.run.agentId} is not the agent that submitted it in ${label(submitted)}`);
  }
}

function checkToolCalls(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[], notes: string[]): void {
  const { events } = evidence;
  const calls = evidence.content.toolCalls;
  const seal = events.findLast((e) => typeof e.data.toolCallsDigest === "string");
  if (seal) {
    if (toolCallsDigest(calls) !== seal.data.toolCallsDigest || (typeof seal.data.toolCalls === "number" && seal.data.toolCalls !== calls.length)) {
      problems.push(`tool calls: the ${calls.length} call(s) do not match the digest sealed by ${label(seal)}`);
    }
  } else if (calls.length > 0) {
    notes.push(`tool calls: not sealed yet (the run had not ended when the file was made); only each call's own digests are checked`);
  }
  const against = seal ? "the sealed digest" : "its recorded digest";
  for (const call of calls) {
    if (call.purged !== null) {
      if (!seal || !purgedAfter(events, seal, { seq: call.seq })) problems.push(`tool call ${call.seq}: marked purged, but no run.purged event names it`);
      else notes.push(`tool call ${call.seq} arguments and result: ${call.purged}`);
      continue;
    }
    const matches = (value: unknown, digest: string) => jsonDigest(value) === digest || isTruncationMarker(value);
    if (!matches(call.args, call.argsDigest)) problems.push(`tool call ${call.seq} arguments: digest does not match ${against}`);
    const resultOk = call.resultDigest === null ? call.result === null || call.result === undefined : matches(call.result, call.resultDigest);
    if (!resultOk) problems.push(`tool call ${call.seq} result: digest does not match ${against}`);
  }
}

function checkReviews(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[], notes: string[]): void {
  const reviewed = evidence.events.filter((e) => e.action === "run.reviewed");
  for (const review of evidence.content.reviews) {
    const who = `review by ${review.email}`;
    const event = reviewed.find((e) => e.actorType === "user" && e.actorId === review.reviewerId);
    if (!event) {
      problems.push(`${who}: no run.reviewed event records it`);
      continue;
    }
    if (event.data.verdict !== review.verdict) problems.push(`${who}: verdict does not match ${label(event)}`);
    if ((event.data.comment ?? null) !== review.comment) problems.push(`${who}: comment does not match ${label(event)}`);
    const named = event.data.reviewer as { name?: unknown; email?: unknown } | undefined;
    if (named && typeof named === "object") {
      if (named.name !== review.name) problems.push(`${who}: name does not match ${label(event)}`);
      if (named.email !== review.email) problems.push(`${who}: email does not match ${label(event)}`);
    } else {
      notes.push(`${who}: name and email are not in the chain (${label(event)} predates reviewer names in events); the reviewer id is`);
    }
  }
  for (const event of reviewed) {
    if (!evidence.content.reviews.some((r) => r.reviewerId === event.actorId)) problems.push(`${label(event)}: its review is missing from the file`);
  }
}

function checkPolicy(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[], notes: string[]): void {
  const { policy } = evidence.content;
  const decided = evidence.events.find((e) => typeof e.data.decision === "string" && "policyVersion" in e.data);
  if (!decided) {
    if (policy.decision !== null) problems.push(`policy decision: no event records a decision for this run`);
    return;
  }
  const at = label(decided);
  if (decided.data.decision !== policy.decision) problems.push(`policy decision: does not match ${at}`);
  if ((decided.data.policyVersion ?? null) !== policy.version) problems.push(`policy version: does not match ${at}`);
  if (typeof decided.data.approvalsRequired === "number" && decided.data.approvalsRequired !== policy.approvalsRequired) {
    problems.push(`policy approvals required: does not match ${at}`);
  }
  const reasons = Array.isArray(policy.decisionReasons) ? policy.decisionReasons.map((r) => (r as { policyId?: unknown })?.policyId) : null;
  if (Array.isArray(decided.data.reasons) && canonicalJson(reasons) !== canonicalJson(decided.data.reasons)) {
    problems.push(`policy decision reasons: do not match ${at}`);
  }
  if (typeof decided.data.decisionReasonsDigest === "string") {
    if (jsonDigest(policy.decisionReasons) !== decided.data.decisionReasonsDigest) problems.push(`policy decision reasons: digest does not match ${at}`);
  } else notes.push(`policy decision reasons: only their policy ids are in the chain (${at} predates their digest)`);
  if (typeof decided.data.policyTextDigest === "string") {
    if (policy.text === null || sha256Hex(policy.text) !== decided.data.policyTextDigest) problems.push(`policy text: digest does not match ${at}`);
  } else if (policy.text !== null) notes.push(`policy text: not digested in the chain (${at} predates policy text digests); its version number is`);
}

/** The run's status is the one its latest state event moved it to. */
function checkStatus(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[]): void {
  const latest = evidence.events.findLast((e) => statusOfAction(e.action) !== null);
  if (!latest) problems.push(`run status: no event records a state of this run`);
  else if (statusOfAction(latest.action) !== evidence.run.status) problems.push(`run status: "${evidence.run.status}" does not match ${label(latest)}`);
}

function checkOutcomes(evidence: RunEvidence, _publicKey: KeyObject | null, problems: string[]): void {
  const recorded = evidence.events
    .filter((e) => e.action === "run.outcome_recorded")
    .map((e) => ({ eventId: e.id, action: e.data.action, detail: typeof e.data.detail === "string" ? e.data.detail : null }));
  if (canonicalJson(recorded) !== canonicalJson(evidence.content.outcomes)) problems.push(`outcomes: do not match the run.outcome_recorded events`);
}

/** Checks a parsed evidence file; `publicKey` null checks only its internal consistency. */
export function verifyRunEvidence(evidence: RunEvidence, publicKey: KeyObject | null): EvidenceVerdict {
  const problems: string[] = [];
  const notes: string[] = [];
  const checks = [checkHeads, checkEvents, checkRunContent, checkToolCalls, checkReviews, checkPolicy, checkOutcomes, checkStatus] as const;
  for (const check of checks) {
    try {
      check(evidence, publicKey, problems, notes);
    } catch (error) {
      problems.push(`${check.name}: could not be checked (${error instanceof Error ? error.message : String(error)})`.slice(0, 500));
    }
  }
  return { status: problems.length > 0 ? "mismatch" : publicKey ? "ok" : "unanchored", problems, notes, evidence };
}
