/**
 * The run page's sections, one small function each: rows already loaded (./run-presenter.ts) in,
 * DTO parts of RunDetail (./run-dto.ts) out.
 *
 * Guarantees: pure (no database, no I/O; the clock only where a caller passes `now`); nothing of a
 * Prisma row is passed through — every field is copied into a plain value; stored JSON columns are
 * read defensively (a missing or odd field becomes null, empty or a string, never a crash); every
 * string from an agent, a script, a tool or a dataset goes through ./inert.ts.
 */
import { purgeNotice } from "@/lib/audit/run-content";
import { runColumn, type RunColumnValue } from "@/lib/contracts/run-columns";
import type { Finding } from "@/lib/contracts/analysis";
import { CANCELLABLE_BEFORE_START, EXECUTED_STATUSES } from "@/lib/contracts/run-states";
import { hasScope, type Actor } from "@/lib/contracts/scopes";
import type { AuditEvent, Dataset, Run, RunToolCall, UpstreamTool } from "@/lib/generated/prisma/client";
import { decisionBlocker, type DecisionSubject } from "./decision-rules";
import { pendingRelease, releaseBlocker, resultDigestOf } from "./release";
import { diffLines } from "@/lib/untrusted/diff";
import { highlight } from "./highlight";
import { hasHiddenCharacters, inertCode, inertJson, inertText } from "@/lib/untrusted/inert";
import type { LoadedArtifact } from "@/lib/runs/artifacts";
import { artifactUrl } from "@/lib/runs/artifacts-media";
import { artifactPreview, type ArtifactPreview } from "@/lib/runs/artifacts-preview";
import type {
  AgentOutcomeItem,
  ArtifactItem,
  CapabilityItem,
  CodeView,
  FindingItem,
  GateView,
  InputItem,
  OutcomeView,
  PreviousAttempt,
  ProvenanceView,
  ReasonItem,
  ReleaseView,
  ReviewItem,
  SameCodeItem,
  TimelineItem,
  ToolCallItem,
  ViewerView,
} from "./run-dto";

/** The columns withPurgeNotices replaces, and the tool calls' payloads. */
type PurgeableRun = {
  purged: unknown;
  code: string;
  purpose: string;
  result: unknown;
  execution: unknown;
  provenance: unknown;
  toolCalls: { purgedAt: Date | null; args: unknown; result: unknown }[];
};

/**
 * The run with what retention purged (lib/audit/retention.ts) replaced by "purged on DATE by
 * retention", so every section shows that instead of an empty value: the code (as a comment), the
 * purpose, the result, the logs (one line), the prompt and context, and each purged tool call's
 * arguments and result.
 */
export function withPurgeNotices<R extends PurgeableRun>(run: R): R {
  const notice = (field: string) => purgeNotice(run.purged, field);
  const execution = runColumn({ id: "", execution: run.execution }, "execution");
  const provenance = notice("provenance");
  return {
    ...run,
    code: notice("code") ? `// ${notice("code")}` : run.code,
    purpose: notice("purpose") ?? run.purpose,
    result: notice("result") ?? run.result,
    execution: notice("execution") && execution ? { ...execution, logs: [{ level: "log", text: notice("execution") }] } : run.execution,
    provenance: provenance && run.provenance && typeof run.provenance === "object" ? { ...run.provenance, prompt: provenance } : run.provenance,
    toolCalls: run.toolCalls.map((call) => {
      if (!call.purgedAt) return call;
      const purged = `purged on ${call.purgedAt.toISOString().slice(0, 10)} by retention`;
      return { ...call, args: purged, result: purged };
    }),
  };
}

export type StoredInput = RunColumnValue<"inputs">[number];
export type StoredProvenance = RunColumnValue<"provenance">;
export type ToolRow = Pick<UpstreamTool, "name" | "description" | "annotations" | "dataClass" | "quarantined"> & {
  server: { name: string; dataClass: string | null };
};

const words = (value: string) => value.replaceAll("_", " ");

export function findingItems(stored: readonly Finding[]): FindingItem[] {
  return stored.map(({ code, severity, message, line, column }) => ({
    code,
    severity,
    message: inertText(message, 2_000),
    line,
    column,
  }));
}

/** The script as it runs (highlighted, every character kept to be marked) with its findings by line. */
export function codeView(code: string, findings: FindingItem[]): CodeView {
  const findingsByLine: Record<number, FindingItem[]> = {};
  for (const finding of findings) (findingsByLine[finding.line] ??= []).push(finding);
  return { lines: highlight(code), findingsByLine, hiddenCharacters: hasHiddenCharacters(code) };
}

/** `server.tool` → its parts; the tool keeps any further dots. */
export function splitCapability(name: string): { server: string; tool: string } {
  const [server = "", ...rest] = name.split(".");
  return { server, tool: rest.join(".") };
}

export function capabilityItems(capabilitySet: string[], tools: ToolRow[]): CapabilityItem[] {
  return capabilitySet.map((name) => {
    const { server, tool } = splitCapability(name);
    const row = tools.find((t) => t.server.name === server && t.name === tool);
    const annotations = (row?.annotations ?? {}) as Record<string, unknown>;
    const flag = (key: string) => (typeof annotations[key] === "boolean" ? (annotations[key] as boolean) : null);
    return {
      name: inertText(name, 300),
      server: inertText(server, 200),
      tool: inertText(tool, 200),
      known: Boolean(row),
      description: row ? inertText(row.description, 2_000) : null,
      dataClass: row ? (row.dataClass ?? row.server.dataClass) : null,
      quarantined: row?.quarantined ?? false,
      annotations: {
        title: typeof annotations.title === "string" ? inertText(annotations.title, 200) : null,
        readOnly: flag("readOnlyHint"),
        destructive: flag("destructiveHint"),
        idempotent: flag("idempotentHint"),
        openWorld: flag("openWorldHint"),
      },
    };
  });
}

const PREVIEW_LINES = 20;
const PREVIEW_BYTES = 8 * 1024;

function preview(content: Uint8Array, mediaType: string): { text: string | null; truncated: boolean } {
  if (!/^(text\/|application\/(json|x-ndjson|csv|xml|yaml))/.test(mediaType)) return { text: null, truncated: false };
  const head = Buffer.from(content.subarray(0, PREVIEW_BYTES)).toString("utf8");
  const lines = head.split("\n");
  const shown = lines.slice(0, PREVIEW_LINES).join("\n");
  return { text: inertText(shown, PREVIEW_BYTES), truncated: lines.length > PREVIEW_LINES || content.length > PREVIEW_BYTES };
}

/** Each input as approved at intake, with a text preview and whether the dataset changed since. */
export function inputItems(inputs: readonly StoredInput[], datasets: Pick<Dataset, "id" | "sha256" | "sizeBytes" | "mediaType" | "content">[]): InputItem[] {
  return inputs.map((input) => {
    const dataset = datasets.find((d) => d.id === input.datasetId);
    const shown = dataset ? preview(dataset.content, dataset.mediaType) : { text: null, truncated: false };
    return {
      name: inertText(input.name, 200),
      dataClass: input.dataClass,
      sizeBytes: dataset?.sizeBytes ?? null,
      mediaType: dataset?.mediaType ?? null,
      sha256: input.sha256,
      changed: !dataset || dataset.sha256 !== input.sha256,
      preview: shown.text,
      previewTruncated: shown.truncated,
    };
  });
}

export function reasonItems(stored: readonly { policyId: string; text: string; source: string }[]): ReasonItem[] {
  return stored.map((r) => ({
    policyId: inertText(r.policyId, 200),
    text: inertText(r.text, 2_000),
    source: inertText(r.source, 20_000),
  }));
}

export function reviewItems(reviews: { verdict: string; comment: string | null; createdAt: Date; reviewer: { name: string; email: string } }[]): ReviewItem[] {
  return reviews.map((r) => ({ reviewer: r.reviewer.name, email: r.reviewer.email, verdict: r.verdict, comment: r.comment, at: r.createdAt.toISOString() }));
}

export function provenanceView(provenance: StoredProvenance): ProvenanceView {
  return {
    model: provenance.model ? inertText(String(provenance.model), 200) : null,
    conversationId: provenance.conversationId ? inertText(String(provenance.conversationId), 200) : null,
    prompt: provenance.prompt ? inertText(String(provenance.prompt), 1_000) : null,
    promptLength: typeof provenance.prompt === "string" ? provenance.prompt.length : 0,
    context: provenance.context ? inertText(String(provenance.context), 1_000) : null,
    contextLength: typeof provenance.context === "string" ? provenance.context.length : 0,
  };
}

/** The agent's record_outcome rows; the detail is agent text, made inert. */
export function agentOutcomeItems(rows: readonly { id: string; at: Date; action: string; detail: string | null }[]): AgentOutcomeItem[] {
  return rows.map((row) => ({
    id: row.id,
    at: row.at.toISOString(),
    action: words(row.action),
    detail: row.detail === null ? null : inertText(row.detail, 2_000),
  }));
}

/** The diff from the agent's previous attempt in the same conversation; code keeps every character. */
export function previousAttemptView(previous: Pick<Run, "id" | "createdAt" | "status" | "code"> | null, code: string): PreviousAttempt | null {
  if (!previous) return null;
  const diff = diffLines(previous.code, code);
  return {
    id: previous.id,
    createdAt: previous.createdAt.toISOString(),
    status: previous.status,
    diff: { ...diff, lines: diff.lines.map((line) => ({ ...line, text: inertCode(line.text, 2_000) })) },
  };
}

export function sameCodeItems(
  runs: (Pick<Run, "id" | "createdAt" | "status" | "decision"> & { agent: { name: string }; reviews: { verdict: string; reviewer: { email: string } }[] })[],
): SameCodeItem[] {
  return runs.map((r) => ({
    id: r.id,
    createdAt: r.createdAt.toISOString(),
    agent: inertText(r.agent.name, 200),
    status: r.status,
    decision: r.decision,
    reviewers: r.reviews.map((v) => `${v.reviewer.email}: ${words(v.verdict)}`),
  }));
}

/** Who did something, in words: a person's email, an agent's name, else `type:id`. */
export type ActorNames = { emails: Map<string, string>; agents: Map<string, string> };

function actorLabel(type: string, id: string | null, names: ActorNames): string {
  if (type === "user" && id) return names.emails.get(id) ?? `user:${id}`;
  if (type === "agent" && id) return `agent:${names.agents.get(id) ?? id}`;
  return id ? `${type}:${id}` : type;
}

export function timelineItems(events: Pick<AuditEvent, "id" | "at" | "action" | "actorType" | "actorId" | "data">[], names: ActorNames): TimelineItem[] {
  return events.map((e) => ({
    id: e.id.toString(),
    at: e.at.toISOString(),
    action: e.action,
    actor: inertText(actorLabel(e.actorType, e.actorId, names), 300),
    data: inertJson(e.data, 4_000),
  }));
}

/** Previews on one page at most; later artifacts are listed without one. */
const MAX_PREVIEWS = 20;

/**
 * The artifacts as sealed in `execution` (the list the terminal event digests), each with its
 * stored bytes' state (lib/runs/artifacts.ts loadRunArtifacts) and its preview.
 */
export function artifactItems(runId: string, sealed: RunColumnValue<"execution">["artifacts"], stored: readonly LoadedArtifact[]): ArtifactItem[] {
  const byName = new Map(stored.map((artifact) => [artifact.name, artifact]));
  let previews = 0;
  return sealed.map((artifact) => {
    const row = byName.get(artifact.name);
    const mediaType = row?.mediaType ?? artifact.mediaType ?? null;
    let preview: ArtifactPreview = row
      ? artifactPreview(row, row.bytes, row.purgedAt !== null)
      : { kind: "none", reason: "the bytes were not kept (the run ended before artifacts were stored)" };
    if (preview.kind !== "none" && ++previews > MAX_PREVIEWS)
      preview = { kind: "none", reason: `only the first ${MAX_PREVIEWS} previews are shown; download it` };
    return {
      name: inertText(artifact.name, 600),
      sizeBytes: artifact.sizeBytes,
      sha256: artifact.sha256,
      mediaType,
      downloadUrl: row && !row.purgedAt ? artifactUrl(runId, row.name, "download") : null,
      imageUrl: row && preview.kind === "image" ? artifactUrl(runId, row.name, "image") : null,
      purgedAt: row?.purgedAt?.toISOString() ?? null,
      preview,
    };
  });
}

/** What running produced; null until the run finished executing (a held result is shown to the reviewers who release it). */
export function outcomeView(
  run: Pick<Run, "id" | "status" | "finishedAt" | "result" | "error" | "execution" | "isolation">,
  storedArtifacts: readonly LoadedArtifact[] = [],
): OutcomeView | null {
  if (!run.finishedAt || (run.execution === null && !(EXECUTED_STATUSES as readonly string[]).includes(run.status))) return null;
  const execution = runColumn(run, "execution");
  const error = runColumn(run, "error");
  return {
    result: run.result === null ? null : inertJson(run.result),
    logs: (execution?.logs ?? []).slice(0, 1_000).map((l) => ({ level: l.level, text: inertText(l.text, 10_000) })),
    stats: {
      wallMs: execution?.wallMs ?? null,
      cpuMs: execution?.cpuMs ?? null,
      peakRssMb: execution?.peakRssMb ?? null,
      toolCalls: execution?.toolCalls ?? null,
    },
    flags: (execution?.flags ?? []).map((f) => inertText(f, 500)),
    truncated: execution?.truncated ?? false,
    artifacts: artifactItems(run.id, execution?.artifacts ?? [], storedArtifacts),
    error: error
      ? {
          code: error.code,
          message: inertText(error.message, 10_000),
          untrusted: error.untrusted,
          detail: error.detail ? inertText(error.detail, 5_000) : null,
        }
      : null,
    isolation: run.isolation,
    gate: execution?.gate ? gateView(execution.gate) : null,
  };
}

function gateView(gate: NonNullable<RunColumnValue<"execution">["gate"]>): GateView {
  return {
    checks: gate.checks.map((c) => ({ kind: c.kind, label: inertText(c.label, 300), ok: c.ok, message: inertText(c.message, 1_000) })),
    assumptions: gate.assumptions.map((a) => inertText(a, 2_000)),
    partial: gate.partial === null ? null : inertText(gate.partial, 2_000),
    rows: {
      read: Object.entries(gate.rows.read).map(([tool, rows]) => ({ tool: inertText(tool, 300), rows })),
      returned: gate.rows.returned,
      covered: gate.rows.covered,
    },
  };
}

export function toolCallItems(
  calls: Pick<RunToolCall, "seq" | "server" | "tool" | "durationMs" | "outcome" | "error" | "args" | "result" | "at">[],
): ToolCallItem[] {
  return calls.map((call) => ({
    seq: call.seq,
    name: inertText(`${call.server}.${call.tool}`, 300),
    durationMs: call.durationMs,
    outcome: call.outcome,
    error: call.error ? inertText(call.error, 2_000) : null,
    args: inertJson(call.args),
    result: inertJson(call.result),
    at: call.at.toISOString(),
  }));
}

/** What the page offers this viewer: the decision form only where decideRun would accept their vote. */
/**
 * The release panel of a run whose result was withheld from its agent: a check_failed run, or one
 * release policy held (pending_release, and what it became); null for any other run. `result` is
 * the stored one (before purge notices).
 */
export function releaseView(
  run: Omit<Parameters<typeof releaseBlocker>[0], "releases"> & {
    result: unknown;
    error: unknown;
    execution: unknown;
    releases: readonly { reviewerId: string; comment: string; createdAt: Date; reviewer: { email: string } }[];
  },
  viewer: Actor,
): ReleaseView | null {
  const decision = runColumn(run, "releaseDecision");
  // Held after it ran (a plan preview's decision also lives here until the run executes).
  const held = decision !== null && decision.decision === "escalate" && run.execution !== null;
  if (run.status !== "check_failed" && !held) return null;
  const blocker = releaseBlocker(run, viewer);
  const withheldBy = run.status === "withheld" ? (runColumn(run, "error")?.message ?? null) : null;
  return {
    kind: held ? "held" : "check_failed",
    status: run.status,
    heldBecause: decision !== null && decision.decision !== "allow" && run.execution !== null ? decision.reasons.map((r) => inertText(r.text, 2_000)) : [],
    expiresAt: held && run.status === "pending_release" ? (run.releaseExpiresAt?.toISOString() ?? null) : null,
    releasedAt: run.releasedAt?.toISOString() ?? null,
    withheldBecause: withheldBy === null ? null : inertText(withheldBy, 5_000),
    required: pendingRelease(run)?.quorum ?? Math.max(1, held ? decision.approvalsRequired : run.approvalsRequired),
    releases: run.releases.map((r) => ({ email: r.reviewer.email, comment: inertText(r.comment, 5_000), at: r.createdAt.toISOString() })),
    resultDigest: resultDigestOf(run.result),
    canRelease: blocker === null,
    canWithhold: blocker === null && held,
    cannotReleaseBecause: blocker ? inertText(blocker.message, 1_000) : null,
  };
}

export function viewerView(run: DecisionSubject, viewer: Actor, now: Date = new Date()): ViewerView {
  const blocker = decisionBlocker(run, viewer, now);
  const reviewer = hasScope(viewer, "runs:review");
  const mine = viewer.type === "user" ? run.reviews.find((r) => r.reviewerId === viewer.id) : undefined;
  return {
    reviewer,
    canDecide: blocker === null,
    cannotDecideCode: blocker?.code ?? null,
    cannotDecideBecause: blocker ? inertText(blocker.message, 1_000) : null,
    canCancel: reviewer && ([...CANCELLABLE_BEFORE_START, "running"] as string[]).includes(run.status),
    myVerdict: mine?.verdict ?? null,
  };
}
