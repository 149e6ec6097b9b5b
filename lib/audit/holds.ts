/**
 * Legal holds (docs/audit.md, "Retention"): compliance places a hold on one run or on every run of
 * an agent, with a reason; while it is not released, retention purges nothing of those runs
 * (airlock_purge() refuses them in the database, not only the job).
 *
 * - placeHold(tx, actor, {runId | agentName | agentOfRunId, reason}) → the hold's id; audited
 *   `hold.placed` (subject: the run, or the agent, named or as the agent of a run).
 * - releaseHold(tx, actor, {holdId, reason}) — audited `hold.released`. A hold is never deleted
 *   and released once: the row keeps who placed and who released it and why (a trigger refuses
 *   any other change, and any delete).
 * - activeHolds(db, runId): the holds that keep a run (its own and its agent's), for readers.
 *
 * Refuses actors without audit:read (compliance), input outside the closed schemas (bad_request),
 * unknown runs, agents and holds (not_found), a release of a released hold (conflict).
 */
import { z } from "zod";
import { actorLabel, requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { recordAudit } from "./record";

const reason = z.string().trim().min(1, "a reason is required").max(2_000);

const placeSchema = z.union([
  z.object({ runId: z.uuid(), reason }).strict(),
  z.object({ agentName: z.string().trim().min(1).max(200), reason }).strict(),
  z.object({ agentOfRunId: z.uuid(), reason }).strict(),
]);

const releaseSchema = z.object({ holdId: z.uuid(), reason }).strict();

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues.find((i) => i.code !== "invalid_union") ?? parsed.error.issues[0];
    const field = issue?.path.join(".") || null;
    throw new AppError("bad_request", `${field ?? "hold"}: ${issue?.message ?? "invalid"}`, { details: { field } });
  }
  return parsed.data;
}

export async function placeHold(tx: Tx, actor: Actor, input: z.input<typeof placeSchema>): Promise<{ holdId: string }> {
  requireScope(actor, "audit:read");
  const data = parse(placeSchema, input);
  let subject: { type: "run" | "agent"; id: string };
  if ("runId" in data) {
    const run = await tx.run.findUnique({ where: { id: data.runId }, select: { id: true } });
    if (!run) throw new AppError("not_found", `No run ${data.runId}.`);
    subject = { type: "run", id: run.id };
  } else if ("agentName" in data) {
    const agent = await tx.agent.findUnique({ where: { name: data.agentName }, select: { id: true } });
    if (!agent) throw new AppError("not_found", `No agent named ${data.agentName}.`);
    subject = { type: "agent", id: agent.id };
  } else {
    const run = await tx.run.findUnique({ where: { id: data.agentOfRunId }, select: { agentId: true } });
    if (!run) throw new AppError("not_found", `No run ${data.agentOfRunId}.`);
    subject = { type: "agent", id: run.agentId };
  }
  const hold = await tx.legalHold.create({
    data: { [subject.type === "run" ? "runId" : "agentId"]: subject.id, reason: data.reason, placedBy: actorLabel(actor) },
    select: { id: true },
  });
  await recordAudit(tx, { actor, action: "hold.placed", subject, data: { holdId: hold.id, reason: data.reason } });
  return { holdId: hold.id };
}

export async function releaseHold(tx: Tx, actor: Actor, input: z.input<typeof releaseSchema>): Promise<void> {
  requireScope(actor, "audit:read");
  const data = parse(releaseSchema, input);
  const hold = await tx.legalHold.findUnique({ where: { id: data.holdId } });
  if (!hold) throw new AppError("not_found", `No legal hold ${data.holdId}.`);
  const released = await tx.legalHold.updateMany({
    where: { id: hold.id, releasedAt: null },
    data: { releasedAt: new Date(), releasedBy: actorLabel(actor), releaseReason: data.reason },
  });
  if (released.count === 0) throw new AppError("conflict", `Legal hold ${hold.id} was already released.`);
  await recordAudit(tx, {
    actor,
    action: "hold.released",
    subject: hold.runId ? { type: "run", id: hold.runId } : { type: "agent", id: hold.agentId },
    data: { holdId: hold.id, reason: data.reason },
  });
}

export type ActiveHold = { id: string; on: "run" | "agent"; reason: string; placedBy: string; placedAt: Date };

export async function activeHolds(db: Db | Tx, runId: string): Promise<ActiveHold[]> {
  const run = await db.run.findUnique({ where: { id: runId }, select: { agentId: true } });
  if (!run) return [];
  const holds = await db.legalHold.findMany({
    where: { releasedAt: null, OR: [{ runId }, { agentId: run.agentId }] },
    orderBy: { placedAt: "asc" },
  });
  return holds.map((h) => ({ id: h.id, on: h.runId ? "run" : "agent", reason: h.reason, placedBy: h.placedBy, placedAt: h.placedAt }));
}
