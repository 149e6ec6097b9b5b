/**
 * The run page's read model: `runDetail(db, id, viewer)` returns a RunDetail (./run-dto.ts) or
 * null when there is no such run.
 *
 * Guarantees: a plain, serializable DTO, never a Prisma object (rows are loaded here and copied
 * section by section in ./run-sections.ts); every string that came from an agent, a script, a tool
 * or a dataset is inert text (./inert.ts), hidden characters kept for components/ui/inert.tsx to
 * mark; the code shown is the code that runs. `viewer` decides only what is *offered* (the
 * decision form, the cancel button), with ./decision-rules.ts decisionBlocker — the same rule
 * decideRun enforces again on the server, so the page's reason is the refusal's words.
 */
import { runColumn, type RunPlan } from "@/lib/contracts/run-columns";
import "server-only";
import type { UserActor } from "@/lib/auth/session";
import type { Db } from "@/lib/db";
import { loadRunArtifacts } from "@/lib/runs/artifacts";
import { countRunTokens } from "@/lib/runs/pii-tokens";
import { parseRunLimits } from "@/lib/runs/limits";
import { moneyTotals } from "@/lib/runs/plan";
import { inertText } from "@/lib/untrusted/inert";
import { reviewBinding } from "./service";
import { toolUses } from "./tool-uses";
import { riskOf, runFacts } from "./risk";
import type { PlanView, RunDetail } from "./run-dto";
import { jsonLooksLikeInstructions } from "@/lib/untrusted/sanitize";
import {
  agentOutcomeItems,
  capabilityItems,
  codeView,
  findingItems,
  inputItems,
  outcomeView,
  previousAttemptView,
  provenanceView,
  withPurgeNotices,
  reasonItems,
  releaseView,
  reviewItems,
  sameCodeItems,
  splitCapability,
  timelineItems,
  toolCallItems,
  viewerView,
  type ActorNames,
} from "./run-sections";

const UUID = /^[0-9a-f-]{36}$/i;

/** The run with what the page shows of it directly: agent and owner, policy version, votes, tool calls. */
function loadRun(db: Db, id: string) {
  return db.run.findUnique({
    where: { id },
    include: {
      agent: { select: { name: true, ownerId: true, owner: { select: { email: true } } } },
      policyVersion: { select: { version: true } },
      reviews: { orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true, name: true } } } },
      toolCalls: { orderBy: { seq: "asc" } },
      outcomes: { orderBy: { at: "asc" } },
      releases: { orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true } } } },
    },
  });
}

type LoadedRun = NonNullable<Awaited<ReturnType<typeof loadRun>>>;

/** The registry rows of the capability set's tools. */
function loadTools(db: Db, capabilitySet: string[]) {
  if (capabilitySet.length === 0) return Promise.resolve([]);
  return db.upstreamTool.findMany({
    where: { OR: capabilitySet.map(splitCapability).map(({ server, tool }) => ({ server: { name: server }, name: tool })) },
    include: { server: { select: { name: true, dataClass: true } } },
  });
}

/** The agent's previous attempt in the same conversation, if it named one. */
function loadPreviousAttempt(db: Db, run: LoadedRun, conversationId: string | undefined) {
  if (!conversationId) return Promise.resolve(null);
  return db.run.findFirst({
    where: {
      agentId: run.agentId,
      id: { not: run.id },
      createdAt: { lt: run.createdAt },
      provenance: { path: ["conversationId"], equals: conversationId },
    },
    orderBy: { createdAt: "desc" },
    select: { id: true, createdAt: true, status: true, code: true },
  });
}

/** Up to ten other runs of the same code (by sha256), newest first, with their votes. */
function loadSameCode(db: Db, run: LoadedRun) {
  return db.run.findMany({
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
  });
}

/** The run's audit events (up to 500, oldest first). */
function loadEvents(db: Db, runId: string) {
  return db.auditEvent.findMany({ where: { subjectType: "run", subjectId: runId }, orderBy: { id: "asc" }, take: 500 });
}

/** Emails of the people and names of the agents that appear in the timeline. */
async function loadActorNames(db: Db, events: { actorType: string; actorId: string | null }[]): Promise<ActorNames> {
  const idsOf = (type: string) => [...new Set(events.filter((e) => e.actorType === type && e.actorId).map((e) => e.actorId!))];
  const userIds = idsOf("user");
  const agentIds = idsOf("agent");
  const [users, agents] = await Promise.all([
    userIds.length ? db.user.findMany({ where: { id: { in: userIds } }, select: { id: true, email: true } }) : [],
    agentIds.length ? db.agent.findMany({ where: { id: { in: agentIds } }, select: { id: true, name: true } }) : [],
  ]);
  return { emails: new Map(users.map((u) => [u.id, u.email])), agents: new Map(agents.map((a) => [a.id, a.name])) };
}

function planView(plan: RunPlan | null): PlanView | null {
  if (!plan) return null;
  return {
    digest: plan.digest,
    writes: plan.writes.map((write) => ({
      seq: write.seq,
      tool: `${write.server}.${write.tool}`,
      arguments: inertText(JSON.stringify(write.arguments, null, 2), 8_000),
      money: write.money
        ? { amount: write.money.amount, currency: write.money.currency, subject: write.money.subject && inertText(write.money.subject, 200) }
        : null,
      instructionLike: jsonLooksLikeInstructions(write.arguments),
    })),
    totals: moneyTotals(plan).map((total) => ({ ...total, subjects: total.subjects.map((subject) => inertText(subject, 200)) })),
  };
}

export async function runDetail(db: Db, id: string, viewer: UserActor): Promise<RunDetail | null> {
  if (!UUID.test(id)) return null;
  const loaded = await loadRun(db, id);
  if (!loaded) return null;
  const run = withPurgeNotices(loaded);

  const capabilitySet = runColumn(run, "capabilitySet") ?? [];
  const provenance = runColumn(run, "provenance") ?? {};
  const inputs = runColumn(run, "inputs") ?? [];
  const [tools, datasets, previous, sameCode, events, artifacts, personalData] = await Promise.all([
    loadTools(db, capabilitySet),
    db.dataset.findMany({ where: { id: { in: inputs.map((i) => i.datasetId) } } }),
    loadPreviousAttempt(db, run, provenance.conversationId),
    loadSameCode(db, run),
    loadEvents(db, run.id),
    loadRunArtifacts(db, run.id),
    countRunTokens(db, run.id),
  ]);
  const names = await loadActorNames(db, events);

  const findings = findingItems(runColumn(run, "findings") ?? []);
  const facts = runFacts(runColumn(run, "facts"));
  const plan = runColumn(run, "plan");
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
    plan: planView(plan),
    code: codeView(run.code, findings),
    toolUses: toolUses(run.code, run.language),
    findings,
    facts,
    risk: riskOf(run, facts, findings),
    capabilities: capabilityItems(capabilitySet, tools),
    limits: parseRunLimits(run),
    inputs: inputItems(inputs, datasets),
    reasons: reasonItems(runColumn(run, "decisionReasons") ?? []),
    policyVersion: run.policyVersion?.version ?? null,
    approvalsRequired: run.approvalsRequired,
    reviewerRole: run.reviewerRole,
    reviews: reviewItems(run.reviews),
    provenance: provenanceView(provenance),
    previousAttempt: previousAttemptView(previous, run.code),
    sameCode: sameCodeItems(sameCode),
    timeline: timelineItems(events, names),
    outcome: outcomeView(run, artifacts),
    personalData,
    release: releaseView(loaded, viewer),
    agentOutcomes: agentOutcomeItems(run.outcomes),
    toolCalls: toolCallItems(run.toolCalls),
    binding: reviewBinding(run),
    viewer: viewerView(run, viewer),
  };
}
