/**
 * Admin decisions about upstream tools. acceptTool trusts a quarantined tool as it is now: the
 * new hash and definition become the pin (conditional on the tool still being quarantined with
 * that hash, so an admin never accepts a definition they did not see), audited with both hashes.
 * The broker of this process lifts the quarantine at once; brokers of other processes re-check the
 * database pin before refusing a call to a quarantined tool (lib/broker/broker.ts).
 */
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { Prisma } from "@/lib/generated/prisma/client";

export async function acceptTool(
  db: Db,
  actor: Actor,
  input: { server: string; tool: string; schemaHash: string },
): Promise<{ server: string; tool: string; pinnedHash: string }> {
  requireScope(actor, "tools:manage");
  return db.$transaction(async (tx) => {
    const row = await tx.upstreamTool.findFirst({ where: { name: input.tool, server: { name: input.server } } });
    if (!row) throw new AppError("not_found", `No tool ${input.server}.${input.tool}.`);
    if (!row.quarantined) throw new AppError("conflict", `${input.server}.${input.tool} is not quarantined.`);
    if (row.schemaHash !== input.schemaHash) {
      throw new AppError("conflict", `${input.server}.${input.tool} changed again since you looked at it; review the new definition.`);
    }
    const definition = {
      description: row.description,
      inputSchema: row.inputSchema,
      outputSchema: row.outputSchema,
      annotations: row.annotations,
    } as Prisma.InputJsonObject;
    const updated = await tx.upstreamTool.updateMany({
      where: { id: row.id, quarantined: true, schemaHash: input.schemaHash },
      data: { quarantined: false, pinnedHash: input.schemaHash, pinnedDefinition: definition },
    });
    if (updated.count !== 1) throw new AppError("conflict", `${input.server}.${input.tool} was decided by someone else.`);
    await recordAudit(tx, {
      actor,
      action: "tool.accepted",
      subject: { type: "tool", id: row.id },
      data: { server: input.server, tool: input.tool, previousHash: row.pinnedHash, acceptedHash: input.schemaHash },
    });
    return { server: input.server, tool: input.tool, pinnedHash: input.schemaHash };
  });
}
