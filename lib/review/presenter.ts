/**
 * Read models of the review console (issue 5 "Queue" and "Run page"): plain, serializable DTOs,
 * never Prisma objects. Every string that came from an agent, a script or a tool passes through
 * lib/review/inert.ts here; hidden characters are kept, for components to render through
 * components/ui/inert.tsx as marker elements.
 *
 * `viewer` decides only what is *offered* (the decision form, the cancel button); the service
 * functions enforce the same rules again on the server.
 */
import "server-only";
import type { UserActor } from "@/lib/auth/session";
import { hasScope } from "@/lib/auth/scopes";
import type { Db } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { Finding } from "@/lib/intake/findings";
import { CANCELLABLE_BEFORE_START } from "@/lib/runs/states";
import { diffLines, type LineDiff } from "./diff";
import { highlight, type HighlightedLine } from "./highlight";
import { hasHiddenCharacters, inertCode, inertJson, inertText } from "./inert";
import { parseRunLimits, type DecidedRunLimits } from "@/lib/runs/limits";

// ---------------------------------------------------------------------------------------------
// Risk

const EFFECTS = ["read_only", "write", "destructive"] as const;
export type Effect = (typeof EFFECTS)[number];
const EFFECT_RISK = { read_only: 0, write: 2, destructive: 4 } as const satisfies Record<Effect, number>;
const DATA_CLASS_RISK = { public: 0, internal: 0, confidential: 1, pii: 2, financial: 2, phi: 3 } as const satisfies Record<string, number>;

type Facts = { effect?: string; openWorld?: boolean; dataClasses?: string[]; toolCount?: number };

function factsOf(value: Prisma.JsonValue): Required<Facts> & { effect: Effect } {
  const facts = (value ?? {}) as Facts;
  // Unclassified means the most dangerous kind.
  const effect = (EFFECTS as readonly string[]).includes(facts.effect ?? "") ? (facts.effect as Effect) : "destructive";
  return {
    effect,
    openWorld: Boolean(facts.openWorld),
    dataClasses: Array.isArray(facts.dataClasses) ? facts.dataClasses.map(String) : [],
    toolCount: facts.toolCount ?? 0,
  };
}

/** Higher is riskier: effect, then reach outside the registry, regulated data, and findings. */
export function riskScore(facts: ReturnType<typeof factsOf>, findings: Pick<Finding, "severity">[]): number {
  const dataRisk = Math.max(0, ...facts.dataClasses.map((c) => DATA_CLASS_RISK[c as keyof typeof DATA_CLASS_RISK] ?? 3));
  const findingRisk = findings.some((f) => f.severity === "critical" || f.severity === "error") ? 2 : findings.some((f) => f.severity === "warning") ? 1 : 0;
  return EFFECT_RISK[facts.effect] * 10 + (facts.openWorld ? 5 : 0) + dataRisk * 2 + findingRisk;
}

export function riskLevel(score: number): "low" | "medium" | "high" {
  return score >= 40 ? "high" : score >= 20 ? "medium" : "low";
}

// ---------------------------------------------------------------------------------------------
// Queue

export type QueueFilters = { agent?: string; effect?: Effect };

export function parseQueueFilters(params: Record<string, string | string[] | undefined> | URLSearchParams): QueueFilters {
  const get = (key: string) => {
    const value = params instanceof URLSearchParams ? params.get(key) : params[key];
    return typeof value === "string" && value.length > 0 && value.length <= 200 ? value : undefined;
  };
  const effect = get("effect");
  return { agent: get("agent"), effect: effect && (EFFECTS as readonly string[]).includes(effect) ? (effect as Effect) : undefined };
}

export type QueueItem = {
  id: string;
  agent: string;
  purpose: string;
  createdAt: string;
  reviewExpiresAt: string | null;
  effect: Effect;
  openWorld: boolean;
  dataClasses: string[];
  findings: { critical: number; warning: number };
  risk: { score: number; level: "low" | "medium" | "high" };
  approvalsRequired: number;
  approvals: string[];
  /** Why this viewer cannot decide it (null: they can). */
  blockedBecause: "own_agent" | "already_voted" | "role" | null;
};

export type QueueView = {
  items: QueueItem[];
  total: number;
  waitingForYou: number;
  agents: string[];
  filters: QueueFilters;
  generatedAt: string;
};

function blockedFor(
  viewer: UserActor,
  run: { reviewerRole: string | null; agent: { ownerId: string }; reviews: { reviewerId: string }[] },
): QueueItem["blockedBecause"] {
  if (run.agent.ownerId === viewer.id) return "own_agent";
  if (run.reviews.some((r) => r.reviewerId === viewer.id)) return "already_voted";
  if (!hasScope(viewer, "runs:review") || (run.reviewerRole && run.reviewerRole !== viewer.role)) return "role";
  return null;
}

export async function queueView(db: Db, viewer: UserActor, filters: QueueFilters = {}): Promise<QueueView> {
  const rows = await db.run.findMany({
    where: { status: "pending_review" },
    orderBy: { createdAt: "asc" },
    take: 500,
    select: {
      id: true,
      purpose: true,
      createdAt: true,
      reviewExpiresAt: true,
      facts: true,
      findings: true,
      approvalsRequired: true,
      reviewerRole: true,
      agent: { select: { name: true, ownerId: true } },
      reviews: { select: { reviewerId: true, verdict: true, reviewer: { select: { email: true } } } },
    },
  });
  const all = rows.map((run): QueueItem => {
    const facts = factsOf(run.facts);
    const findings = (run.findings ?? []) as Finding[];
    const score = riskScore(facts, findings);
    return {
      id: run.id,
      agent: inertText(run.agent.name, 200),
      purpose: inertText(run.purpose, 500),
      createdAt: run.createdAt.toISOString(),
      reviewExpiresAt: run.reviewExpiresAt?.toISOString() ?? null,
      effect: facts.effect,
      openWorld: facts.openWorld,
      dataClasses: facts.dataClasses,
      findings: {
        critical: findings.filter((f) => f.severity === "critical" || f.severity === "error").length,
        warning: findings.filter((f) => f.severity === "warning").length,
      },
      risk: { score, level: riskLevel(score) },
      approvalsRequired: Math.max(1, run.approvalsRequired),
      approvals: run.reviews.filter((r) => r.verdict === "approve").map((r) => r.reviewer.email),
      blockedBecause: blockedFor(viewer, run),
    };
  });
  const items = all
    .filter((item) => (!filters.agent || item.agent === filters.agent) && (!filters.effect || item.effect === filters.effect))
    .sort((a, b) => b.risk.score - a.risk.score || a.createdAt.localeCompare(b.createdAt));
  return {
    items,
    total: all.length,
    waitingForYou: all.filter((item) => item.blockedBecause === null).length,
    agents: [...new Set(all.map((item) => item.agent))].sort(),
    filters,
    generatedAt: new Date().toISOString(),
  };
}

/** Runs this viewer could still approve: pending, not of an agent they own, not voted on yet. */
export async function waitingForYouCount(db: Db, viewer: UserActor): Promise<number> {
  if (!hasScope(viewer, "runs:review")) return 0;
  return db.run.count({
    where: {
      status: "pending_review",
      agent: { ownerId: { not: viewer.id } },
      reviews: { none: { reviewerId: viewer.id } },
      OR: [{ reviewerRole: null }, { reviewerRole: viewer.role }],
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Runs list

export type RunRow = { id: string; agent: string; status: string; purpose: string; decision: string | null; createdAt: string };

export async function recentRuns(db: Db, take = 100): Promise<RunRow[]> {
  const rows = await db.run.findMany({ orderBy: { createdAt: "desc" }, take, include: { agent: { select: { name: true } } } });
  return rows.map((run) => ({
    id: run.id,
    agent: inertText(run.agent.name, 200),
    status: run.status,
    purpose: inertText(run.purpose, 300),
    decision: run.decision,
    createdAt: run.createdAt.toISOString(),
  }));
}

// ---------------------------------------------------------------------------------------------
// Run page

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
  code: { lines: HighlightedLine[]; findingsByLine: Record<number, FindingItem[]>; hiddenCharacters: boolean };
  findings: FindingItem[];
  facts: { effect: Effect; openWorld: boolean; dataClasses: string[]; toolCount: number };
  risk: { score: number; level: "low" | "medium" | "high" };
  capabilities: CapabilityItem[];
  /** The limits the run is decided on and runs with; null for runs stored before they existed. */
  limits: DecidedRunLimits | null;
  inputs: InputItem[];
  reasons: { policyId: string; text: string; source: string }[];
  policyVersion: number | null;
  approvalsRequired: number;
  reviewerRole: string | null;
  reviews: ReviewItem[];
  provenance: { model: string | null; conversationId: string | null; prompt: string | null; promptLength: number };
  previousAttempt: { id: string; createdAt: string; status: string; diff: LineDiff } | null;
  sameCode: { id: string; createdAt: string; agent: string; status: string; decision: string | null; reviewers: string[] }[];
  timeline: TimelineItem[];
  outcome: {
    result: string | null;
    logs: { level: string; text: string }[];
    stats: { wallMs: number | null; cpuMs: number | null; peakRssMb: number | null; toolCalls: number | null };
    flags: string[];
    truncated: boolean;
    artifacts: { name: string; sizeBytes: number; sha256: string }[];
    error: { code: string; message: string; untrusted: boolean } | null;
    isolation: string | null;
  } | null;
  toolCalls: ToolCallItem[];
  /** The facts an approval is bound to, sent back with the decision as hidden fields. */
  binding: { codeSha256: string; capabilitySet: string[]; inputsDigest: string; policyVersionId: string | null };
  viewer: {
    /** Holds runs:review (sees the decision panel; the form itself only when canDecide). */
    reviewer: boolean;
    canDecide: boolean;
    /** Why the decision form is not offered, in words. */
    cannotDecideBecause: string | null;
    canCancel: boolean;
    myVerdict: string | null;
  };
};

const PREVIEW_LINES = 20;
const PREVIEW_BYTES = 8 * 1024;

function preview(content: Uint8Array, mediaType: string): { text: string | null; truncated: boolean } {
  if (!/^(text\/|application\/(json|x-ndjson|csv|xml|yaml))/.test(mediaType)) return { text: null, truncated: false };
  const head = Buffer.from(content.subarray(0, PREVIEW_BYTES)).toString("utf8");
  const lines = head.split("\n");
  const shown = lines.slice(0, PREVIEW_LINES).join("\n");
  return { text: inertText(shown, PREVIEW_BYTES), truncated: lines.length > PREVIEW_LINES || content.length > PREVIEW_BYTES };
}

function actorLabel(type: string, id: string | null, emails: Map<string, string>, agents: Map<string, string>): string {
  if (type === "user" && id) return emails.get(id) ?? `user:${id}`;
  if (type === "agent" && id) return `agent:${agents.get(id) ?? id}`;
  return id ? `${type}:${id}` : type;
}

function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

export async function runDetail(db: Db, id: string, viewer: UserActor): Promise<RunDetail | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const run = await db.run.findUnique({
    where: { id },
    include: {
      agent: { select: { name: true, ownerId: true, owner: { select: { email: true } } } },
      policyVersion: { select: { version: true } },
      reviews: { orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true, name: true } } } },
      toolCalls: { orderBy: { seq: "asc" } },
    },
  });
  if (!run) return null;

  const findings = ((run.findings ?? []) as Finding[]).map(({ code, severity, message, line, column }) => ({
    code,
    severity,
    message: inertText(message, 2_000),
    line,
    column,
  }));
  const findingsByLine: Record<number, FindingItem[]> = {};
  for (const finding of findings) (findingsByLine[finding.line] ??= []).push(finding);
  const facts = factsOf(run.facts);
  const score = riskScore(facts, findings as Finding[]);
  const capabilitySet = (run.capabilitySet ?? []) as string[];
  const provenance = (run.provenance ?? {}) as { model?: string; conversationId?: string; prompt?: string };
  const runInputs = (run.inputs ?? []) as { name: string; datasetId: string; sha256: string; dataClass: string }[];

  const [tools, datasets, previous, sameCode, events] = await Promise.all([
    db.upstreamTool.findMany({
      where: { OR: capabilitySet.map((name) => ({ server: { name: name.split(".")[0] ?? "" }, name: name.split(".").slice(1).join(".") })) },
      include: { server: { select: { name: true, dataClass: true } } },
    }),
    db.dataset.findMany({ where: { id: { in: runInputs.map((i) => i.datasetId) } } }),
    provenance.conversationId
      ? db.run.findFirst({
          where: {
            agentId: run.agentId,
            id: { not: run.id },
            createdAt: { lt: run.createdAt },
            provenance: { path: ["conversationId"], equals: provenance.conversationId },
          },
          orderBy: { createdAt: "desc" },
          select: { id: true, createdAt: true, status: true, code: true },
        })
      : null,
    db.run.findMany({
      where: { codeSha256: run.codeSha256, id: { not: run.id } },
      orderBy: { createdAt: "desc" },
      take: 10,
      select: {
        id: true,
        createdAt: true,
        status: true,
        decision: true,
        agent: { select: { name: true } },
        reviews: { select: { verdict: true, reviewer: { select: { email: true } } } },
      },
    }),
    db.auditEvent.findMany({ where: { subjectType: "run", subjectId: run.id }, orderBy: { id: "asc" }, take: 500 }),
  ]);

  const userIds = [...new Set(events.filter((e) => e.actorType === "user" && e.actorId).map((e) => e.actorId!))];
  const agentIds = [...new Set(events.filter((e) => e.actorType === "agent" && e.actorId).map((e) => e.actorId!))];
  const [users, agents] = await Promise.all([
    userIds.length ? db.user.findMany({ where: { id: { in: userIds } }, select: { id: true, email: true } }) : [],
    agentIds.length ? db.agent.findMany({ where: { id: { in: agentIds } }, select: { id: true, name: true } }) : [],
  ]);
  const emails = new Map(users.map((u) => [u.id, u.email]));
  const agentNames = new Map(agents.map((a) => [a.id, a.name]));

  const capabilities: CapabilityItem[] = capabilitySet.map((name) => {
    const [server = "", ...rest] = name.split(".");
    const tool = rest.join(".");
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

  const inputs: InputItem[] = runInputs.map((input) => {
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

  const finished = run.finishedAt && ["succeeded", "failed", "timed_out", "cancelled"].includes(run.status);
  const stats = (run.stats ?? {}) as Record<string, unknown>;
  const logs = Array.isArray(stats.logs) ? (stats.logs as { level?: unknown; text?: unknown }[]) : [];
  const storedError = run.error as { code?: string; message?: string; untrusted?: boolean } | null;

  const mine = run.reviews.find((r) => r.reviewerId === viewer.id);
  const reasonNot =
    run.status !== "pending_review"
      ? `This run is ${run.status.replaceAll("_", " ")}; it is not waiting for review.`
      : !hasScope(viewer, "runs:review")
        ? "Your role cannot decide runs."
        : run.agent.ownerId === viewer.id
          ? `You own the agent ${run.agent.name}, so another reviewer must decide its runs.`
          : run.reviewerRole && run.reviewerRole !== viewer.role
            ? `Policy asks a ${run.reviewerRole} to review this run.`
            : mine
              ? `You already voted (${mine.verdict.replaceAll("_", " ")}); another reviewer must complete the quorum.`
              : run.reviewExpiresAt && run.reviewExpiresAt.getTime() <= Date.now()
                ? "The review period has expired."
                : null;

  return {
    id: run.id,
    status: run.status,
    decision: run.decision,
    purpose: inertText(run.purpose, 2_000),
    language: run.language,
    agent: { name: inertText(run.agent.name, 200), owner: run.agent.owner.email },
    createdAt: run.createdAt.toISOString(),
    reviewExpiresAt: run.reviewExpiresAt?.toISOString() ?? null,
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    code: { lines: highlight(run.code), findingsByLine, hiddenCharacters: hasHiddenCharacters(run.code) },
    findings,
    facts,
    risk: { score, level: riskLevel(score) },
    capabilities,
    limits: parseRunLimits(run.limits),
    inputs,
    reasons: ((run.decisionReasons ?? []) as { policyId: string; text: string; source?: string }[]).map((r) => ({
      policyId: inertText(String(r.policyId), 200),
      text: inertText(String(r.text), 2_000),
      source: inertText(String(r.source ?? ""), 20_000),
    })),
    policyVersion: run.policyVersion?.version ?? null,
    approvalsRequired: run.approvalsRequired,
    reviewerRole: run.reviewerRole,
    reviews: run.reviews.map((r) => ({
      reviewer: r.reviewer.name,
      email: r.reviewer.email,
      verdict: r.verdict,
      comment: r.comment,
      at: r.createdAt.toISOString(),
    })),
    provenance: {
      model: provenance.model ? inertText(String(provenance.model), 200) : null,
      conversationId: provenance.conversationId ? inertText(String(provenance.conversationId), 200) : null,
      prompt: provenance.prompt ? inertText(String(provenance.prompt), 1_000) : null,
      promptLength: typeof provenance.prompt === "string" ? provenance.prompt.length : 0,
    },
    previousAttempt: previous
      ? { id: previous.id, createdAt: previous.createdAt.toISOString(), status: previous.status, diff: inertDiff(diffLines(previous.code, run.code)) }
      : null,
    sameCode: sameCode.map((r) => ({
      id: r.id,
      createdAt: r.createdAt.toISOString(),
      agent: inertText(r.agent.name, 200),
      status: r.status,
      decision: r.decision,
      reviewers: r.reviews.map((v) => `${v.reviewer.email}: ${v.verdict.replaceAll("_", " ")}`),
    })),
    timeline: events.map((e) => ({
      id: e.id.toString(),
      at: e.at.toISOString(),
      action: e.action,
      actor: inertText(actorLabel(e.actorType, e.actorId, emails, agentNames), 300),
      data: inertJson(e.data, 4_000),
    })),
    outcome: finished
      ? {
          result: run.result === null ? null : inertJson(run.result),
          logs: logs.slice(0, 1_000).map((l) => ({ level: String(l.level ?? "log"), text: inertText(String(l.text ?? ""), 10_000) })),
          stats: { wallMs: num(stats.wallMs), cpuMs: num(stats.cpuMs), peakRssMb: num(stats.peakRssMb), toolCalls: num(stats.toolCalls) },
          flags: Array.isArray(stats.flags) ? (stats.flags as unknown[]).map((f) => inertText(String(f), 500)) : [],
          truncated: Boolean(stats.truncated),
          artifacts: Array.isArray(stats.artifacts)
            ? (stats.artifacts as { name: string; sizeBytes: number; sha256: string }[]).map((a) => ({
                name: inertText(String(a.name), 300),
                sizeBytes: Number(a.sizeBytes),
                sha256: String(a.sha256),
              }))
            : [],
          error: storedError
            ? { code: String(storedError.code), message: inertText(String(storedError.message ?? ""), 10_000), untrusted: Boolean(storedError.untrusted) }
            : null,
          isolation: run.isolation,
        }
      : null,
    toolCalls: run.toolCalls.map((call) => ({
      seq: call.seq,
      name: inertText(`${call.server}.${call.tool}`, 300),
      durationMs: call.durationMs,
      outcome: call.outcome,
      error: call.error ? inertText(call.error, 2_000) : null,
      args: inertJson(call.args),
      result: inertJson(call.result),
      at: call.at.toISOString(),
    })),
    binding: { codeSha256: run.codeSha256, capabilitySet, inputsDigest: run.inputsDigest, policyVersionId: run.policyVersionId },
    viewer: {
      reviewer: hasScope(viewer, "runs:review"),
      canDecide: reasonNot === null,
      cannotDecideBecause: reasonNot,
      canCancel: hasScope(viewer, "runs:review") && ([...CANCELLABLE_BEFORE_START, "running"] as string[]).includes(run.status),
      myVerdict: mine?.verdict ?? null,
    },
  };
}

function inertDiff(diff: LineDiff): LineDiff {
  // Code: ESC and every hidden character stay, to be marked (not stripped) on the page.
  return { ...diff, lines: diff.lines.map((line) => ({ ...line, text: inertCode(line.text, 2_000) })) };
}
