/**
 * The shape of the run page's read model (./run-presenter.ts runDetail): types only, no code.
 *
 * Guarantees of every value of these types, as runDetail builds them: plain and serializable
 * (strings, numbers, booleans, arrays, records; dates as ISO strings), never a Prisma object;
 * every string that came from an agent, a script, a tool or a dataset is inert text
 * (./inert.ts), to be rendered through components/ui/inert.tsx. Code keeps every character, to be
 * marked, never dropped.
 */
import type { ArtifactPreview } from "@/lib/runs/artifacts-preview";
import type { DecidedRunLimits } from "@/lib/runs/limits";
import type { ToolUses } from "./tool-uses";
import type { DecisionBlockerCode } from "./decision-rules";
import type { LineDiff } from "@/lib/untrusted/diff";
import type { HighlightedLine } from "./highlight";
import type { Risk, RunFacts } from "./risk";

export type CapabilityItem = {
  name: string;
  server: string;
  tool: string;
  known: boolean;
  description: string | null;
  dataClass: string | null;
  quarantined: boolean;
  annotations: { title: string | null; readOnly: boolean | null; destructive: boolean | null; idempotent: boolean | null; openWorld: boolean | null };
};

export type InputItem = {
  name: string;
  dataClass: string;
  sizeBytes: number | null;
  mediaType: string | null;
  sha256: string;
  /** The dataset content no longer matches the digest approved at intake. */
  changed: boolean;
  preview: string | null;
  previewTruncated: boolean;
};

export type FindingItem = { code: string; severity: string; message: string; line: number; column: number };

export type ReviewItem = { reviewer: string; email: string; verdict: string; comment: string | null; at: string };

export type TimelineItem = { id: string; at: string; action: string; actor: string; data: string };

export type ToolCallItem = { seq: number; name: string; durationMs: number; outcome: string; error: string | null; args: string; result: string; at: string };

export type CodeView = { lines: HighlightedLine[]; findingsByLine: Record<number, FindingItem[]>; hiddenCharacters: boolean };

export type ReasonItem = { policyId: string; text: string; source: string };

export type ProvenanceView = {
  model: string | null;
  conversationId: string | null;
  prompt: string | null;
  promptLength: number;
  /** The context the agent selected for the model (an excerpt), and its full length in characters. */
  context: string | null;
  contextLength: number;
};

/** What the agent said it did with the run's result (record_outcome), oldest first. */
export type AgentOutcomeItem = { id: string; at: string; action: string; detail: string | null };

export type PreviousAttempt = { id: string; createdAt: string; status: string; diff: LineDiff };

export type SameCodeItem = { id: string; createdAt: string; agent: string; status: string; decision: string | null; reviewers: string[] };

/** The host's report on the result (lib/sandbox/checks.ts): checks, assumptions, lineage; all text inert. */
export type GateView = {
  checks: { kind: string; label: string; ok: boolean; message: string }[];
  assumptions: string[];
  partial: string | null;
  rows: { read: { tool: string; rows: number }[]; returned: number | null; covered: number | null };
};

/**
 * A result withheld from its agent (lib/review/release.ts): because a check failed, or because a
 * release policy held it; who released it, and whether the viewer may release or withhold it.
 */
export type ReleaseView = {
  kind: "check_failed" | "held";
  status: string;
  /** The release policies' reasons for the hold. */
  heldBecause: string[];
  /** While held: when the hold lapses. */
  expiresAt: string | null;
  releasedAt: string | null;
  /** Withheld by a reviewer or by policy: why. */
  withheldBecause: string | null;
  required: number;
  releases: { email: string; comment: string; at: string }[];
  /** What a release is bound to: the digest of the stored result. */
  resultDigest: string;
  canRelease: boolean;
  canWithhold: boolean;
  cannotReleaseBecause: string | null;
};

export type OutcomeView = {
  result: string | null;
  logs: { level: string; text: string }[];
  stats: { wallMs: number | null; cpuMs: number | null; peakRssMb: number | null; toolCalls: number | null };
  flags: string[];
  truncated: boolean;
  artifacts: ArtifactItem[];
  error: { code: string; message: string; untrusted: boolean; detail: string | null } | null;
  isolation: string | null;
  gate: GateView | null;
};

/** A file the run wrote under ./out/, as sealed in `execution`, with its stored bytes' state and preview. */
export type ArtifactItem = {
  name: string;
  sizeBytes: number;
  sha256: string;
  /** Sniffed from the bytes when they were stored; null for a run from before. */
  mediaType: string | null;
  /** The download route; null when no bytes were stored for it. */
  downloadUrl: string | null;
  /** The image route, for an `<img>` preview of a PNG or SVG; null otherwise. */
  imageUrl: string | null;
  purgedAt: string | null;
  preview: ArtifactPreview;
};

/** The writes a plan preview intercepted, as reviewers approve them (lib/runs/plan.ts). */
export type PlanView = {
  digest: string;
  writes: {
    seq: number;
    tool: string;
    arguments: string;
    money: { amount: string; currency: string | null; subject: string | null } | null;
    /** Whether a string of its arguments reads like instructions to a model (what the agent's result would be held for). */
    instructionLike: boolean;
  }[];
  /** Per currency: "3 refunds, 30.00 EUR, invoices inv_0001, …". */
  /** Per currency: the sum of the amounts' sizes, how many writes, how many of them negative. */
  totals: { currency: string | null; total: string; count: number; negative: number; subjects: string[] }[];
};

/** The facts an approval is bound to, sent back with the decision as hidden fields. */
export type DecisionBinding = { codeSha256: string; capabilitySet: string[]; inputsDigest: string; policyVersionId: string | null; planDigest: string | null };

export type ViewerView = {
  /** Holds runs:review (sees the decision panel; the form itself only when canDecide). */
  reviewer: boolean;
  canDecide: boolean;
  /** decisionBlocker's code when the viewer may not decide (null: they may). */
  cannotDecideCode: DecisionBlockerCode | null;
  /** Why the decision form is not offered, in decisionBlocker's words (the ones decideRun refuses with). */
  cannotDecideBecause: string | null;
  canCancel: boolean;
  myVerdict: string | null;
};

export type RunDetail = {
  id: string;
  status: string;
  decision: string | null;
  purpose: string;
  language: string;
  agent: { name: string; owner: string };
  createdAt: string;
  reviewExpiresAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** The plan of writes from the preview; null when the run had none (read-only, or not escalated). */
  plan: PlanView | null;
  code: CodeView;
  /** Every tool reference in the code, with the arguments of each call (./tool-uses.ts). */
  toolUses: ToolUses;
  findings: FindingItem[];
  facts: RunFacts;
  risk: Risk;
  capabilities: CapabilityItem[];
  /** The limits the run is decided on and runs with; null for runs stored before they existed. */
  limits: DecidedRunLimits | null;
  inputs: InputItem[];
  reasons: ReasonItem[];
  policyVersion: number | null;
  approvalsRequired: number;
  reviewerRole: string | null;
  reviews: ReviewItem[];
  provenance: ProvenanceView;
  previousAttempt: PreviousAttempt | null;
  sameCode: SameCodeItem[];
  timeline: TimelineItem[];
  outcome: OutcomeView | null;
  /** Personal-data values the agent saw only as tokens, shown here in the clear (the view records it). */
  personalData: number;
  /** Only for a check_failed run. */
  release: ReleaseView | null;
  agentOutcomes: AgentOutcomeItem[];
  toolCalls: ToolCallItem[];
  binding: DecisionBinding;
  viewer: ViewerView;
};
