/**
 * Read models of the audit log for console pages: plain DTOs, never Prisma objects.
 * Reading a run's timeline through the console goes through service.ts (it is audited); the
 * functions here are the unaudited building blocks and the small status widgets.
 *
 * A run's timeline names people and agents (a person's name and email, an agent's name) beside
 * the ids, says in one sentence what each event means (presenter-actions.ts), and keeps each
 * event's raw JSON and each tool call's arguments and result (while retention keeps them) for the
 * page to show on request. Stored text is returned as it is stored (capped): the page renders it
 * inert (components/ui/inert.tsx), hidden characters as visible markers.
 */
import type { Db } from "@/lib/db";
import { runColumn } from "@/lib/contracts/run-columns";
import { shownErrorCode } from "@/lib/contracts/run-states";
import { inertJson, inertText } from "@/lib/untrusted/inert";
import { describeAction } from "./presenter-actions";
import type { RunSearchItem } from "./search";
import { purgeNotice } from "./run-content";

export type AuditListItem = {
  id: string;
  at: string;
  actor: string;
  action: string;
  subject: string;
  hash: string;
};

function actorOf(row: { actorType: string; actorId: string | null }): string {
  return row.actorId ? `${row.actorType}:${row.actorId}` : row.actorType;
}

export async function recentAuditEvents(db: Db, take = 100): Promise<AuditListItem[]> {
  const rows = await db.auditEvent.findMany({ orderBy: { id: "desc" }, take });
  return rows.map((row) => ({
    id: row.id.toString(),
    at: row.at.toISOString(),
    actor: actorOf(row),
    action: row.action,
    subject: row.subjectId ? `${row.subjectType}:${row.subjectId}` : row.subjectType,
    hash: row.hash,
  }));
}

/** What the agent and person filters suggest: agent names and people (email, name), at most 500 each. */
export async function filterSuggestions(db: Db): Promise<{ agents: string[]; people: { email: string; name: string }[] }> {
  const [agents, people] = await Promise.all([
    db.agent.findMany({ select: { name: true }, orderBy: { name: "asc" }, take: 500 }),
    db.user.findMany({ select: { email: true, name: true }, orderBy: { email: "asc" }, take: 500 }),
  ]);
  return { agents: agents.map((a) => a.name), people };
}

export type LastVerification = {
  at: string;
  actor: string;
  ok: boolean;
  eventsChecked: number;
  durationMs: number;
  headId: string | null;
  broken: { eventId: string | null; reason: string; detail: string } | null;
};

/**
 * The most recent verification, from its own audit event ("audit.verified"). Ordered by time on
 * the (action, at) index: ordered by id, PostgreSQL walks the whole log backwards to find a rare
 * action.
 */
export async function lastVerification(db: Db): Promise<LastVerification | null> {
  const row = await db.auditEvent.findFirst({ where: { action: "audit.verified" }, orderBy: [{ at: "desc" }, { id: "desc" }] });
  if (!row) return null;
  const data = row.data as {
    ok?: boolean;
    eventsChecked?: number;
    durationMs?: number;
    head?: { id: string } | null;
    broken?: LastVerification["broken"];
  };
  const person = row.actorType === "user" && row.actorId ? await db.user.findUnique({ where: { id: row.actorId }, select: { email: true } }) : null;
  return {
    at: row.at.toISOString(),
    actor: person?.email ?? actorOf(row),
    ok: data.ok === true,
    eventsChecked: data.eventsChecked ?? 0,
    durationMs: data.durationMs ?? 0,
    headId: data.head?.id ?? null,
    broken: data.broken ?? null,
  };
}

export type RunTimeline = {
  run: RunSearchItem & { code: string; finishedAt: string | null };
  /** `actor`: who, in words ("Rita Reviewer <rita@example.com>", "agent refund-bot", "system cli:ops@host"); `data`: the raw JSON. */
  events: (AuditListItem & { actorId: string; description: string; data: string })[];
  toolCalls: {
    seq: number;
    at: string;
    tool: string;
    outcome: string;
    durationMs: number;
    argsDigest: string;
    resultDigest: string | null;
    /** Pretty JSON, or why it is not there (`purged on DATE by retention`). */
    args: string;
    result: string;
  }[];
  reviews: { at: string; reviewer: string; verdict: string; comment: string | null }[];
};

/** `purged on YYYY-MM-DD by retention` (as the export writes it). */
const purgedOn = (at: Date) => `purged on ${at.toISOString().slice(0, 10)} by retention`;

/** "Name <email>", or the email when the name adds nothing. */
const person = (user: { name: string; email: string }) => (user.name && user.name !== user.email ? `${user.name} <${user.email}>` : user.email);

async function actorNames(
  db: Db,
  rows: { actorType: string; actorId: string | null }[],
): Promise<(row: { actorType: string; actorId: string | null }) => string> {
  const ids = (type: string) => [
    ...new Set(rows.filter((r) => r.actorType === type && r.actorId && /^[0-9a-f-]{36}$/i.test(r.actorId)).map((r) => r.actorId!)),
  ];
  const [users, agents] = await Promise.all([
    db.user.findMany({ where: { id: { in: ids("user") } }, select: { id: true, name: true, email: true } }),
    db.agent.findMany({ where: { id: { in: ids("agent") } }, select: { id: true, name: true } }),
  ]);
  const userNames = new Map(users.map((u) => [u.id, person(u)]));
  const agentNames = new Map(agents.map((a) => [a.id, a.name]));
  return (row) => {
    if (row.actorType === "user" && row.actorId) return userNames.get(row.actorId) ?? `user ${row.actorId}`;
    if (row.actorType === "agent" && row.actorId) return `agent ${agentNames.get(row.actorId) ?? row.actorId}`;
    return row.actorId ? `${row.actorType} ${row.actorId}` : row.actorType;
  };
}

export async function runTimeline(db: Db, runId: string): Promise<RunTimeline | null> {
  if (!/^[0-9a-f-]{36}$/i.test(runId)) return null;
  const run = await db.run.findUnique({
    where: { id: runId },
    include: { agent: { include: { owner: { select: { email: true } } } } },
  });
  if (!run) return null;
  const [events, toolCalls, reviews] = await Promise.all([
    db.auditEvent.findMany({ where: { subjectType: "run", subjectId: runId }, orderBy: { id: "asc" } }),
    db.runToolCall.findMany({ where: { runId }, orderBy: { seq: "asc" } }),
    db.review.findMany({ where: { runId }, orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true, name: true } } } }),
  ]);
  const actorName = await actorNames(db, events);
  return {
    run: {
      id: run.id,
      agent: run.agent.name,
      owner: run.agent.owner.email,
      status: run.status,
      errorCode: shownErrorCode(run, runColumn(run, "error")?.code ?? null),
      decision: run.decision,
      purpose: purgeNotice(run.purged, "purpose") ?? run.purpose,
      codeSha256: run.codeSha256,
      code: purgeNotice(run.purged, "code") ? `// ${purgeNotice(run.purged, "code")}` : run.code,
      createdAt: run.createdAt.toISOString(),
      finishedAt: run.finishedAt?.toISOString() ?? null,
    },
    events: events.map((row) => ({
      id: row.id.toString(),
      at: row.at.toISOString(),
      actor: inertText(actorName(row), 400),
      actorId: actorOf(row),
      action: row.action,
      description: inertText(describeAction(row.action, row.data), 400),
      subject: `${row.subjectType}:${row.subjectId}`,
      hash: row.hash,
      data: inertJson(row.data, 16_000),
    })),
    toolCalls: toolCalls.map((call) => ({
      seq: call.seq,
      at: call.at.toISOString(),
      tool: `${call.server}.${call.tool}`,
      outcome: call.outcome,
      durationMs: call.durationMs,
      argsDigest: call.argsDigest,
      resultDigest: call.resultDigest,
      args: call.purgedAt ? purgedOn(call.purgedAt) : inertJson(call.args, 16_000),
      result: call.purgedAt ? purgedOn(call.purgedAt) : inertJson(call.result, 16_000),
    })),
    reviews: reviews.map((review) => ({
      at: review.createdAt.toISOString(),
      reviewer: person(review.reviewer),
      verdict: review.verdict,
      comment: review.comment,
    })),
  };
}
