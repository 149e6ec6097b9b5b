/**
 * Standing approvals: run_skill calls of one published skill version that need no reviewer,
 * because two admins approved them in advance — for named agents, with arguments inside bounds
 * (a JSON Schema over the run_skill arguments, e.g. amountMinor ≤ 5000 and currency EUR), between
 * notBefore and notAfter, at most maxUses times.
 *
 * - proposeStandingApproval (an admin, skills:manage) stores a proposal; it covers nothing yet.
 * - confirmStandingApproval (a different admin) puts it in force.
 * - revokeStandingApproval (any admin) ends it at once: the next call is decided as if it never
 *   existed (it escalates as policy says).
 * - claimStandingApproval(tx, …), from intake in the transaction that stores a run policy
 *   escalated: the first approval in force that covers the call is used, its `uses` raised by one
 *   in one conditional UPDATE (in force, not revoked, uses < maxUses, checked again under the
 *   row's lock), so concurrent calls can never use more than maxUses. Each use is audited
 *   (`standing_approval.used`) with the run it covered.
 * - listStandingApprovals (skills:read): every approval with its state, uses and what remains.
 *
 * Refused: bounds that are not an object schema Ajv compiles, a version that is not published,
 * unknown agents, an empty or inverted window, the proposer confirming their own proposal, an
 * admin confirming one for an agent they own (as no owner reviews their agent's runs; proposing
 * is asking, which an owner may), and changing an approval that is revoked. Every change is audited.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { compileToolSchema } from "@/lib/broker/schema-check";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { AppError, invalidArguments } from "@/lib/errors";
import type { Prisma } from "@/lib/generated/prisma/client";

const MAX_USES = 1_000_000;

export const proposeStandingSchema = z.strictObject({
  skillVersionId: z.uuid(),
  agents: z.array(z.string().min(1).max(200)).min(1, "name at least one agent").max(50),
  bounds: z.record(z.string(), z.unknown()),
  notBefore: z.coerce.date().optional(),
  notAfter: z.coerce.date(),
  maxUses: z.number().int().min(1).max(MAX_USES),
  reason: z.string().trim().min(1, "reason is required").max(2_000),
});

const idSchema = z.strictObject({ id: z.uuid() });

function admin(actor: Actor): asserts actor is Actor & { type: "user" } {
  requireScope(actor, "skills:manage");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can manage standing approvals.");
}

function compileBounds(bounds: Record<string, unknown>) {
  if (bounds.type !== "object")
    throw new AppError("bad_request", `bounds: must be an object schema ("type": "object") over the run_skill arguments.`, { details: { field: "bounds" } });
  const check = compileToolSchema(bounds);
  if (check instanceof Error)
    throw new AppError("bad_request", `bounds: ${check.message.replace("the tool's schema", "the schema")}`, { details: { field: "bounds" } });
  return check;
}

/**
 * Separation of duties, as for a review: an agent's owner may ask (propose) but not approve
 * (confirm) in advance the runs of their agent, as they may submit but not review them.
 */
function refuseOwnAgents(actor: Actor, agents: readonly { name: string; ownerId: string }[]): void {
  const own = agents.filter((a) => "id" in actor && a.ownerId === actor.id).map((a) => a.name);
  if (own.length > 0) {
    throw new AppError("forbidden", `You own the agent ${own.join(", ")}, so you cannot confirm a standing approval for its runs; another admin must.`, {
      details: { reason: "own_agent" },
    });
  }
}

export async function proposeStandingApproval(db: Db, actor: Actor, raw: unknown): Promise<{ id: string }> {
  admin(actor);
  const parsed = proposeStandingSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const input = parsed.data;
  compileBounds(input.bounds);
  const notBefore = input.notBefore ?? new Date();
  if (!(input.notAfter > notBefore)) throw new AppError("bad_request", "notAfter: must be after notBefore.", { details: { field: "notAfter" } });
  const version = await db.skillVersion.findUnique({ where: { id: input.skillVersionId }, include: { skill: true } });
  if (!version) throw new AppError("bad_request", `skillVersionId: no skill version ${input.skillVersionId}.`, { details: { field: "skillVersionId" } });
  if (version.status !== "published")
    throw new AppError("conflict", `${version.skill.name} v${version.version} is ${version.status}; only a published version can carry standing approvals.`);
  const agents = await db.agent.findMany({ where: { name: { in: input.agents }, revokedAt: null }, select: { id: true, name: true } });
  const unknown = input.agents.filter((name) => !agents.some((a) => a.name === name));
  if (unknown.length > 0)
    throw new AppError("bad_request", `agents: no active agent ${unknown.map((n) => JSON.stringify(n.slice(0, 200))).join(", ")}.`, {
      details: { field: "agents" },
    });
  return db.$transaction(async (tx) => {
    const created = await tx.standingApproval.create({
      data: {
        skillVersionId: version.id,
        agentIds: agents.map((a) => a.id),
        bounds: input.bounds as Prisma.InputJsonValue,
        notBefore,
        notAfter: input.notAfter,
        maxUses: input.maxUses,
        reason: input.reason,
        proposedById: actor.id,
      },
    });
    await recordAudit(tx, {
      actor,
      action: "standing_approval.proposed",
      subject: { type: "standing_approval", id: created.id },
      data: {
        skill: version.skill.name,
        version: version.version,
        skillVersionId: version.id,
        agents: agents.map((a) => a.name),
        bounds: input.bounds as Prisma.InputJsonValue,
        notBefore: notBefore.toISOString(),
        notAfter: input.notAfter.toISOString(),
        maxUses: input.maxUses,
        reason: input.reason,
      },
    });
    return { id: created.id };
  });
}

export async function confirmStandingApproval(db: Db, actor: Actor, raw: unknown): Promise<{ id: string }> {
  admin(actor);
  const parsed = idSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { id } = parsed.data;
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ proposedById: string; confirmedAt: Date | null; revokedAt: Date | null; agentIds: string[] }[]>`
      SELECT "proposedById", "confirmedAt", "revokedAt", "agentIds"::text[] AS "agentIds" FROM "StandingApproval" WHERE id = ${id}::uuid FOR UPDATE`;
    const row = rows[0];
    if (!row) throw new AppError("not_found", `No standing approval ${id}.`);
    if (row.revokedAt) throw new AppError("conflict", "This standing approval was revoked.");
    if (row.confirmedAt) throw new AppError("conflict", "This standing approval is already confirmed.");
    if (row.proposedById === actor.id) throw new AppError("forbidden", "You proposed this standing approval; a second admin must confirm it.");
    refuseOwnAgents(actor, await tx.agent.findMany({ where: { id: { in: row.agentIds } }, select: { name: true, ownerId: true } }));
    await tx.standingApproval.update({ where: { id }, data: { confirmedById: actor.id, confirmedAt: new Date() } });
    await recordAudit(tx, { actor, action: "standing_approval.confirmed", subject: { type: "standing_approval", id }, data: {} });
    return { id };
  });
}

export async function revokeStandingApproval(db: Db, actor: Actor, raw: unknown): Promise<{ id: string }> {
  admin(actor);
  const parsed = idSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { id } = parsed.data;
  return db.$transaction(async (tx) => {
    const revoked = await tx.standingApproval.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date(), revokedById: actor.id } });
    if (revoked.count === 0) {
      const exists = await tx.standingApproval.count({ where: { id } });
      throw exists ? new AppError("conflict", "This standing approval is already revoked.") : new AppError("not_found", `No standing approval ${id}.`);
    }
    const { uses, maxUses } = await tx.standingApproval.findUniqueOrThrow({ where: { id }, select: { uses: true, maxUses: true } });
    await recordAudit(tx, { actor, action: "standing_approval.revoked", subject: { type: "standing_approval", id }, data: { uses, maxUses } });
    return { id };
  });
}

export type StandingUse = { id: string; use: number; maxUses: number };

/**
 * Uses the first standing approval in force that covers this call, or returns null. Runs in the
 * caller's transaction: the use and the run it covers commit together or not at all.
 */
export async function claimStandingApproval(
  tx: Tx,
  call: { skillVersionId: string; agentId: string; arguments: Record<string, unknown>; runId: string },
): Promise<StandingUse | null> {
  const now = new Date();
  const candidates = await tx.standingApproval.findMany({
    where: {
      skillVersionId: call.skillVersionId,
      agentIds: { has: call.agentId },
      confirmedAt: { not: null },
      revokedAt: null,
      notBefore: { lte: now },
      notAfter: { gt: now },
    },
    orderBy: [{ notAfter: "asc" }, { proposedAt: "asc" }],
  });
  for (const candidate of candidates) {
    if (candidate.uses >= candidate.maxUses) continue;
    const check = compileToolSchema(candidate.bounds as Record<string, unknown>);
    if (check instanceof Error || check(call.arguments).length > 0) continue;
    const used = await tx.$queryRaw<{ uses: number; maxUses: number }[]>`
      UPDATE "StandingApproval" SET uses = uses + 1
      WHERE id = ${candidate.id}::uuid AND "revokedAt" IS NULL AND "confirmedAt" IS NOT NULL
        AND uses < "maxUses" AND "notBefore" <= now() AND "notAfter" > now()
      RETURNING uses, "maxUses"`;
    const row = used[0];
    if (!row) continue;
    await recordAudit(tx, {
      actor: { type: "system", name: "standing-approval" },
      action: "standing_approval.used",
      subject: { type: "standing_approval", id: candidate.id },
      data: { runId: call.runId, agentId: call.agentId, use: row.uses, maxUses: row.maxUses },
    });
    return { id: candidate.id, use: row.uses, maxUses: row.maxUses };
  }
  return null;
}

export type StandingState = "proposed" | "active" | "not_yet" | "expired" | "exhausted" | "revoked";

export type StandingRow = {
  id: string;
  skill: string;
  version: number;
  skillVersionId: string;
  agents: string[];
  bounds: unknown;
  notBefore: string;
  notAfter: string;
  maxUses: number;
  uses: number;
  remaining: number;
  state: StandingState;
  reason: string;
  proposedBy: string;
  confirmedBy: string | null;
  revokedBy: string | null;
};

function stateOf(
  a: { confirmedAt: Date | null; revokedAt: Date | null; notBefore: Date; notAfter: Date; uses: number; maxUses: number },
  now: Date,
): StandingState {
  if (a.revokedAt) return "revoked";
  if (!a.confirmedAt) return "proposed";
  if (a.uses >= a.maxUses) return "exhausted";
  if (a.notAfter <= now) return "expired";
  if (a.notBefore > now) return "not_yet";
  return "active";
}

export async function listStandingApprovals(db: Db, actor: Actor, options: { skillVersionId?: string } = {}): Promise<StandingRow[]> {
  requireScope(actor, "skills:read");
  const rows = await db.standingApproval.findMany({
    where: options.skillVersionId ? { skillVersionId: options.skillVersionId } : {},
    orderBy: { proposedAt: "desc" },
    include: {
      skillVersion: { select: { version: true, skill: { select: { name: true } } } },
      proposedBy: { select: { email: true } },
      confirmedBy: { select: { email: true } },
      revokedBy: { select: { email: true } },
    },
    take: 500,
  });
  const agentIds = [...new Set(rows.flatMap((r) => r.agentIds))];
  const agents = new Map((await db.agent.findMany({ where: { id: { in: agentIds } }, select: { id: true, name: true } })).map((a) => [a.id, a.name]));
  const now = new Date();
  return rows.map((r) => ({
    id: r.id,
    skill: r.skillVersion.skill.name,
    version: r.skillVersion.version,
    skillVersionId: r.skillVersionId,
    agents: r.agentIds.map((id) => agents.get(id) ?? id),
    bounds: r.bounds,
    notBefore: r.notBefore.toISOString(),
    notAfter: r.notAfter.toISOString(),
    maxUses: r.maxUses,
    uses: r.uses,
    remaining: r.revokedAt ? 0 : Math.max(0, r.maxUses - r.uses),
    state: stateOf(r, now),
    reason: r.reason,
    proposedBy: r.proposedBy.email,
    confirmedBy: r.confirmedBy?.email ?? null,
    revokedBy: r.revokedBy?.email ?? null,
  }));
}
