/**
 * Read models of the audit log for console pages: plain DTOs, never Prisma objects.
 * Reading a run's timeline through the console goes through service.ts (it is audited); the
 * functions here are the unaudited building blocks and the small status widgets.
 */
import type { Db } from "@/lib/db";
import type { RunSearchItem } from "./search";

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

export type LastVerification = {
  at: string;
  actor: string;
  ok: boolean;
  eventsChecked: number;
  durationMs: number;
  headId: string | null;
  broken: { eventId: string | null; reason: string; detail: string } | null;
};

/** The most recent verification, from its own audit event ("audit.verified"). */
export async function lastVerification(db: Db): Promise<LastVerification | null> {
  const row = await db.auditEvent.findFirst({ where: { action: "audit.verified" }, orderBy: { id: "desc" } });
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
  events: (AuditListItem & { data: string })[];
  toolCalls: { seq: number; at: string; tool: string; outcome: string; durationMs: number; argsDigest: string; resultDigest: string | null }[];
  reviews: { at: string; reviewer: string; verdict: string; comment: string | null }[];
};

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
    db.review.findMany({ where: { runId }, orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true } } } }),
  ]);
  return {
    run: {
      id: run.id,
      agent: run.agent.name,
      owner: run.agent.owner.email,
      status: run.status,
      decision: run.decision,
      purpose: run.purpose,
      codeSha256: run.codeSha256,
      code: run.code,
      createdAt: run.createdAt.toISOString(),
      finishedAt: run.finishedAt?.toISOString() ?? null,
    },
    events: events.map((row) => ({
      id: row.id.toString(),
      at: row.at.toISOString(),
      actor: actorOf(row),
      action: row.action,
      subject: `${row.subjectType}:${row.subjectId}`,
      hash: row.hash,
      data: JSON.stringify(row.data),
    })),
    toolCalls: toolCalls.map((call) => ({
      seq: call.seq,
      at: call.at.toISOString(),
      tool: `${call.server}.${call.tool}`,
      outcome: call.outcome,
      durationMs: call.durationMs,
      argsDigest: call.argsDigest,
      resultDigest: call.resultDigest,
    })),
    reviews: reviews.map((review) => ({
      at: review.createdAt.toISOString(),
      reviewer: review.reviewer.email,
      verdict: review.verdict,
      comment: review.comment,
    })),
  };
}
