/**
 * The run evidence file (docs/audit.md, "Run evidence"): one JSON document a third party can check
 * offline — a run's audit events with inclusion proofs to a signed tree head, a consistency proof
 * from that head to the latest one, and the run's content (code, inputs manifest, policy text and
 * decision, plan, reviews, tool calls, result, outcomes).
 *
 * Guarantees: the schema is closed and versioned (`kind: "airlock.run-evidence", version: 1`);
 * every object is `.strict()`, hashes are 64 lowercase hex digits, times are ISO 8601 UTC with
 * milliseconds, sizes and lists are bounded. evidence.ts writes exactly this shape and
 * evidence-verify.ts refuses anything else, naming the first place that differs. Values from the
 * run (code, arguments, results) are JSON values taken as they are: they are only digested, never
 * interpreted.
 *
 * The whole file is signed too (`fileSignature`, Ed25519 with the checkpoint key, over
 * `evidenceSignedPayload`): the proofs tie the events and the digested content to the log, and the
 * signature covers what no event digests (the labels, the time of each tool call, who exported
 * it), so with the key any change to any value is refused.
 */
import { canonicalJson } from "@/lib/canonical-json";
import { z } from "zod";
import { treeHeadSchema } from "./checkpoints";

export const EVIDENCE_KIND = "airlock.run-evidence";
export const EVIDENCE_VERSION = 1;

const HEX64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits");
const ISO_TIME = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, "must be an ISO 8601 UTC time with milliseconds");
const EVENT_ID = z.string().regex(/^[1-9]\d{0,18}$/, "must be an event id");
const PROOF = z.array(HEX64).max(64);
const COUNT = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** A JSON value from the run, kept exactly as stored (only its digest matters). */
const VALUE = z.unknown();

export const evidenceEventSchema = z
  .object({
    id: EVENT_ID,
    /** Its position in the log: the number of events before it. */
    leafIndex: COUNT,
    at: ISO_TIME,
    actorType: z.string().max(100),
    actorId: z.string().max(500).nullable(),
    action: z.string().max(200),
    subjectType: z.string().max(100),
    subjectId: z.string().max(500).nullable(),
    data: z.record(z.string(), VALUE),
    prevHash: HEX64,
    hash: HEX64,
    /** RFC 6962 audit path from this event's leaf to `proof.treeHead`. */
    inclusionProof: PROOF,
  })
  .strict();

export const evidenceToolCallSchema = z
  .object({
    seq: z.number().int().min(0),
    server: z.string().max(500),
    tool: z.string().max(500),
    phase: z.string().max(50),
    outcome: z.string().max(50),
    readOnly: z.boolean(),
    at: ISO_TIME,
    durationMs: z.number().int(),
    error: z.string().nullable(),
    argsDigest: HEX64,
    resultDigest: HEX64.nullable(),
    /** null once retention purged them (`purged` says when). */
    args: VALUE,
    result: VALUE,
    purged: z.string().max(200).nullable(),
  })
  .strict();

export const evidenceReviewSchema = z
  .object({
    reviewerId: z.string().max(100),
    name: z.string().max(500),
    email: z.string().max(500),
    verdict: z.enum(["approve", "reject", "request_changes"]),
    comment: z.string().nullable(),
    at: ISO_TIME,
  })
  .strict();

export const evidenceOutcomeSchema = z.object({ eventId: EVENT_ID, action: z.string().max(100), detail: z.string().nullable() }).strict();

export const evidenceContentSchema = z
  .object({
    code: VALUE,
    language: VALUE,
    purpose: VALUE,
    provenance: VALUE,
    /** The inputs manifest: [{name, datasetId, sha256, dataClass}]. */
    inputs: VALUE,
    javascript: VALUE,
    limits: VALUE,
    plan: VALUE,
    result: VALUE,
    error: VALUE,
    execution: VALUE,
    /** Fields retention purged: {field: ISO time}. */
    purged: z.record(z.string(), z.string()),
    policy: z
      .object({
        versionId: z.string().max(100).nullable(),
        version: z.number().int().nullable(),
        text: z.string().nullable(),
        decision: z.enum(["allow", "escalate", "deny"]).nullable(),
        decisionReasons: VALUE,
        approvalsRequired: z.number().int(),
      })
      .strict(),
    reviews: z.array(evidenceReviewSchema).max(10_000),
    toolCalls: z.array(evidenceToolCallSchema).max(1_000_000),
    outcomes: z.array(evidenceOutcomeSchema).max(1_000),
  })
  .strict();

export const runEvidenceSchema = z
  .object({
    kind: z.literal(EVIDENCE_KIND),
    version: z.literal(EVIDENCE_VERSION),
    exportedAt: ISO_TIME,
    exportedBy: z.string().max(500),
    /** A label for readers; what is proven is the events and the content below. */
    run: z.object({ id: z.string().max(100), agentId: z.string().max(100), agentName: z.string().max(500), status: z.string().max(50) }).strict(),
    events: z.array(evidenceEventSchema).min(1).max(1_000_000),
    content: evidenceContentSchema,
    proof: z
      .object({
        /** The first signed tree head that holds every event above. */
        treeHead: treeHeadSchema,
        /** The newest signed tree head at export time. */
        latestTreeHead: treeHeadSchema,
        /** RFC 6962 consistency proof from treeHead to latestTreeHead. */
        consistencyProof: PROOF,
      })
      .strict(),
    /** Ed25519 over evidenceSignedPayload(the file without this field), by the checkpoint key. */
    fileSignature: z.object({ keyId: z.string().regex(/^[0-9a-f]{16}$/), signature: z.string().regex(/^[A-Za-z0-9+/]{86}==$/) }).strict(),
  })
  .strict();

export type UnsignedRunEvidence = Omit<z.infer<typeof runEvidenceSchema>, "fileSignature">;

/**
 * What `fileSignature` signs: a domain label, then the canonical JSON of the file without its
 * signature — of the values as a JSON reader gets them, so formatting does not matter.
 */
export function evidenceSignedPayload(evidence: UnsignedRunEvidence): Buffer {
  return Buffer.from(`${EVIDENCE_KIND}.v${EVIDENCE_VERSION}\n${canonicalJson(JSON.parse(JSON.stringify(evidence)) as unknown)}`);
}

export type RunEvidence = z.infer<typeof runEvidenceSchema>;
export type EvidenceEvent = z.infer<typeof evidenceEventSchema>;
export type EvidenceToolCall = z.infer<typeof evidenceToolCallSchema>;
export type EvidenceContent = z.infer<typeof evidenceContentSchema>;
