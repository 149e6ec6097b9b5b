/**
 * recordAudit(tx, event): the one way anything is written to the audit log.
 *
 * Guarantees: the event is appended in the caller's transaction (if the transaction rolls back,
 * so does the event; if the append fails, the caller's change fails); appends are serialized by a
 * transaction-scoped advisory lock so the log is one hash chain:
 *   hash = sha256(prevHash || canonicalJson({at, actorType, actorId, action, subjectType, subjectId, data}))
 * The first event's prevHash is 64 zeros. The table itself refuses UPDATE/DELETE/TRUNCATE
 * (trigger in the init migration). Verification is lib/audit/verify.ts.
 */
import { createHash } from "node:crypto";
import type { Actor } from "@/lib/contracts/scopes";
import { canonicalJson } from "@/lib/canonical-json";
import type { Tx } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";

export const GENESIS_HASH = "0".repeat(64);
/** Arbitrary constant naming the audit chain's advisory lock. */
const AUDIT_CHAIN_LOCK = 7_231_004_417;

export type AuditEventInput = {
  actor: Actor;
  action: string;
  subject: { type: string; id?: string | null };
  data?: Record<string, unknown>;
};

export function chainHash(
  prevHash: string,
  event: {
    at: Date;
    actorType: string;
    actorId: string | null;
    action: string;
    subjectType: string;
    subjectId: string | null;
    data: unknown;
  },
): string {
  return createHash("sha256")
    .update(prevHash)
    .update(
      canonicalJson({
        at: event.at.toISOString(),
        actorType: event.actorType,
        actorId: event.actorId,
        action: event.action,
        subjectType: event.subjectType,
        subjectId: event.subjectId,
        data: event.data,
      }),
    )
    .digest("hex");
}

function actorId(actor: Actor): string | null {
  return actor.type === "system" ? actor.name : actor.id;
}

export async function recordAudit(tx: Tx, input: AuditEventInput): Promise<{ id: bigint; hash: string }> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK})`;
  const last = await tx.auditEvent.findFirst({ orderBy: { id: "desc" }, select: { hash: true } });
  const prevHash = last?.hash ?? GENESIS_HASH;
  const data = JSON.parse(canonicalJson(input.data ?? {})) as Prisma.InputJsonObject;
  const event = {
    at: new Date(),
    actorType: input.actor.type,
    actorId: actorId(input.actor),
    action: input.action,
    subjectType: input.subject.type,
    subjectId: input.subject.id ?? null,
    data,
  };
  const hash = chainHash(prevHash, event);
  const row = await tx.auditEvent.create({ data: { ...event, prevHash, hash }, select: { id: true } });
  return { id: row.id, hash };
}
