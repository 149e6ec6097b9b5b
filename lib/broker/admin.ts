/**
 * Admin decisions about upstream tools, with four eyes. acceptTool is one admin's acceptance of a
 * quarantined tool as it is now (its schemaHash, the definition the admin was shown). The first
 * acceptance only records the request (`tool.acceptance_requested`) and changes nothing the
 * broker trusts; a different admin's acceptance of the same hash makes the definition the pin
 * (`tool.accepted`, naming both). Every step is conditional on the tool still being quarantined
 * with that hash, so nobody accepts a definition they did not see, and a request for an older
 * definition counts for nothing. The broker of this process lifts the quarantine at once; brokers
 * of other processes re-check the database pin before refusing a call (lib/broker/broker.ts). A
 * tool never accepted (added by its upstream after first start) is accepted the same way. The row
 * keeps who accepted the pinned definition and when (`acceptedBy`, asker first).
 *
 * proposeOverride / confirmOverride change what Airlock believes about a tool (its four hints, its
 * data class: lib/broker/overrides.ts) with the same four eyes: a proposal changes nothing
 * (`tool.override_proposed`; a newer proposal replaces a waiting one), a different admin's
 * confirmation of that proposal puts it in force (`tool.override_confirmed`, naming both) and
 * updates the facts the registry rows show; brokers apply it through applyOverrides/syncRegistry.
 *
 * Refuses: an actor without tools:manage, an actor that is not a person (`person_required`), the
 * requesting admin accepting a second time (`own_request`), the proposer confirming their own
 * override (`own_proposal`) — AppError "forbidden" with `details.reason`, recorded by the door as
 * `auth.forbidden`; facts outside the closed schema (bad_request); unknown tools (not_found); tools
 * not quarantined, changed since they were shown, proposals replaced or decided meanwhile (conflict).
 */
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { ToolAnnotations } from "@/lib/contracts/tools";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { Prisma } from "@/lib/generated/prisma/client";
import { applyOverride, overrideFactsSchema, storedOverrideFacts } from "./overrides";

type Admin = Extract<Actor, { type: "user" }>;

/** tools:manage, and a person: every admin decision about a tool is someone's. */
function requireAdminPerson(actor: Actor, what: string): asserts actor is Admin {
  requireScope(actor, "tools:manage");
  if (actor.type !== "user") {
    throw new AppError("forbidden", `Only a signed-in admin can ${what}; with the CLI, name yourself with --as EMAIL.`, {
      details: { reason: "person_required" },
    });
  }
}

export type ToolAcceptance = { server: string; tool: string } & ({ outcome: "requested" } | { outcome: "accepted"; pinnedHash: string });

export async function acceptTool(db: Db, actor: Actor, input: { server: string; tool: string; schemaHash: string }): Promise<ToolAcceptance> {
  requireAdminPerson(actor, "accept a tool");
  const name = `${input.server}.${input.tool}`;
  return db.$transaction(async (tx) => {
    const row = await tx.upstreamTool.findFirst({
      where: { name: input.tool, server: { name: input.server } },
      include: { acceptanceRequestedBy: { select: { email: true } } },
    });
    if (!row) throw new AppError("not_found", `No tool ${name}.`);
    if (!row.quarantined) throw new AppError("conflict", `${name} is not quarantined.`);
    if (row.schemaHash !== input.schemaHash) throw new AppError("conflict", `${name} changed again since you looked at it; review the new definition.`);
    const decided = () => new AppError("conflict", `${name} was decided by someone else; reload it.`);
    const subject = { type: "tool", id: row.id };
    const requester = row.acceptanceRequestedHash === input.schemaHash ? row.acceptanceRequestedById : null;

    if (!requester) {
      const updated = await tx.upstreamTool.updateMany({
        where: {
          id: row.id,
          quarantined: true,
          schemaHash: input.schemaHash,
          OR: [{ acceptanceRequestedHash: null }, { acceptanceRequestedHash: { not: input.schemaHash } }],
        },
        data: { acceptanceRequestedHash: input.schemaHash, acceptanceRequestedById: actor.id, acceptanceRequestedAt: new Date() },
      });
      if (updated.count !== 1) throw decided();
      await recordAudit(tx, {
        actor,
        action: "tool.acceptance_requested",
        subject,
        data: { server: input.server, tool: input.tool, pinnedHash: row.pinnedHash, requestedHash: input.schemaHash },
      });
      return { server: input.server, tool: input.tool, outcome: "requested" };
    }

    if (requester === actor.id) {
      throw new AppError("forbidden", `You asked to accept ${name}; a second admin must accept it.`, { details: { reason: "own_request" } });
    }
    const definition = {
      description: row.description,
      inputSchema: row.inputSchema,
      outputSchema: row.outputSchema,
      annotations: row.claimedAnnotations,
    } as Prisma.InputJsonObject;
    const updated = await tx.upstreamTool.updateMany({
      where: { id: row.id, quarantined: true, schemaHash: input.schemaHash, acceptanceRequestedHash: input.schemaHash, acceptanceRequestedById: requester },
      data: {
        quarantined: false,
        pinnedHash: input.schemaHash,
        pinnedDefinition: definition,
        acceptanceRequestedHash: null,
        acceptanceRequestedById: null,
        acceptanceRequestedAt: null,
        acceptedAt: new Date(),
        acceptedBy: [row.acceptanceRequestedBy?.email ?? requester, actor.email],
      },
    });
    if (updated.count !== 1) throw decided();
    await recordAudit(tx, {
      actor,
      action: "tool.accepted",
      subject,
      data: {
        server: input.server,
        tool: input.tool,
        previousHash: row.pinnedHash,
        acceptedHash: input.schemaHash,
        requestedById: requester,
        newTool: row.pinnedHash === null,
      },
    });
    return { server: input.server, tool: input.tool, outcome: "accepted", pinnedHash: input.schemaHash };
  });
}

export type OverrideProposal = { server: string; tool: string; overrideId: string };

/** One admin's proposal of the facts (hints, data class) that replace the tool's claims; changes nothing yet. */
export async function proposeOverride(db: Db, actor: Actor, input: { server: string; tool: string; facts: unknown }): Promise<OverrideProposal> {
  requireAdminPerson(actor, "override a tool's facts");
  const parsed = overrideFactsSchema.safeParse(input.facts);
  if (!parsed.success) throw new AppError("bad_request", `facts: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  const facts = parsed.data;
  const name = `${input.server}.${input.tool}`;
  return db.$transaction(async (tx) => {
    const row = await tx.upstreamTool.findFirst({ where: { name: input.tool, server: { name: input.server } }, select: { id: true } });
    if (!row) throw new AppError("not_found", `No tool ${name}.`);
    const waiting = await tx.toolOverride.findFirst({ where: { toolId: row.id, confirmedAt: null, withdrawnAt: null }, select: { id: true } });
    if (waiting) {
      const withdrawn = await tx.toolOverride.updateMany({
        where: { id: waiting.id, confirmedAt: null, withdrawnAt: null },
        data: { withdrawnAt: new Date() },
      });
      if (withdrawn.count !== 1) throw new AppError("conflict", `The override of ${name} was decided by someone else; reload it.`);
    }
    const created = await tx.toolOverride.create({ data: { toolId: row.id, facts, proposedById: actor.id }, select: { id: true } });
    await recordAudit(tx, {
      actor,
      action: "tool.override_proposed",
      subject: { type: "tool", id: row.id },
      data: { server: input.server, tool: input.tool, overrideId: created.id, facts, replaces: waiting?.id ?? null },
    });
    return { server: input.server, tool: input.tool, overrideId: created.id };
  });
}

/** A second admin's confirmation of the waiting proposal they were shown: it is in force from now on. */
export async function confirmOverride(db: Db, actor: Actor, input: { server: string; tool: string; overrideId: string }): Promise<OverrideProposal> {
  requireAdminPerson(actor, "confirm an override");
  const name = `${input.server}.${input.tool}`;
  return db.$transaction(async (tx) => {
    const row = await tx.upstreamTool.findFirst({
      where: { name: input.tool, server: { name: input.server } },
      select: { id: true, claimedAnnotations: true, configDataClass: true, server: { select: { dataClass: true } } },
    });
    if (!row) throw new AppError("not_found", `No tool ${name}.`);
    const proposal = await tx.toolOverride.findFirst({ where: { id: input.overrideId, toolId: row.id } });
    if (!proposal || proposal.confirmedAt || proposal.withdrawnAt) {
      throw new AppError("conflict", `That override of ${name} was replaced or decided meanwhile; reload it.`);
    }
    if (proposal.proposedById === actor.id) {
      throw new AppError("forbidden", `You proposed this override of ${name}; a second admin must confirm it.`, { details: { reason: "own_proposal" } });
    }
    const confirmed = await tx.toolOverride.updateMany({
      where: { id: proposal.id, confirmedAt: null, withdrawnAt: null },
      data: { confirmedById: actor.id, confirmedAt: new Date() },
    });
    if (confirmed.count !== 1) throw new AppError("conflict", `That override of ${name} was replaced or decided meanwhile; reload it.`);
    const facts = storedOverrideFacts(proposal.facts, proposal.id);
    const claims = { annotations: row.claimedAnnotations as ToolAnnotations, dataClass: row.configDataClass ?? row.server.dataClass };
    const effective = applyOverride(claims, facts);
    await tx.upstreamTool.update({
      where: { id: row.id },
      data: { annotations: effective.annotations as Prisma.InputJsonObject, dataClass: effective.dataClass },
    });
    await recordAudit(tx, {
      actor,
      action: "tool.override_confirmed",
      subject: { type: "tool", id: row.id },
      data: { server: input.server, tool: input.tool, overrideId: proposal.id, facts, proposedById: proposal.proposedById },
    });
    return { server: input.server, tool: input.tool, overrideId: proposal.id };
  });
}
