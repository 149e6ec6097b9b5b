/**
 * recordAudit(tx, event): the one way anything is written to the audit log.
 *
 * Guarantees:
 * - the event is staged in the caller's transaction ("AuditPending"): if the transaction rolls
 *   back, so does the event; if staging fails, the caller's change fails. Staging takes no lock,
 *   so transactions that record events no longer wait for each other;
 * - the log is one hash chain,
 *     hash = sha256(prevHash || canonicalJson({at, actorType, actorId, action, subjectType, subjectId, data}))
 *   with 64 zeros before the first event. The chain is extended by airlock_audit_sequence(), in
 *   batches under the chain's advisory lock, in the database (lib/db/audit-sequence.ts): a
 *   committed event is chained within a moment by a running web or worker process, and before
 *   any read of the log (every read through the Prisma client chains what is staged first; the
 *   raw-SQL readers call sequenceAudit themselves);
 * - the app role can stage events but cannot change, delete or chain them itself, and cannot
 *   write "AuditEvent" (grants in lib/db/roles.ts; triggers in the migrations). Verification is
 *   lib/audit/verify.ts.
 */
import { sha256Hex } from "@/lib/digest";
import type { Actor } from "@/lib/contracts/scopes";
import { canonicalJson } from "@/lib/canonical-json";
import { afterCommit, type Tx } from "@/lib/db";
import { Prisma } from "@/lib/generated/prisma/client";

export const GENESIS_HASH = "0".repeat(64);

export type AuditEventInput = {
  actor: Actor;
  action: string;
  subject: { type: string; id?: string | null };
  data?: Record<string, unknown>;
};

export type ChainedFields = {
  at: Date;
  actorType: string;
  actorId: string | null;
  action: string;
  subjectType: string;
  subjectId: string | null;
  data: unknown;
};

/** The text an event's chain hash covers after its predecessor's hash. */
export function canonicalEvent(event: ChainedFields): string {
  return canonicalJson({
    at: event.at.toISOString(),
    actorType: event.actorType,
    actorId: event.actorId,
    action: event.action,
    subjectType: event.subjectType,
    subjectId: event.subjectId,
    data: event.data,
  });
}

export function chainHash(prevHash: string, event: ChainedFields): string {
  // The same bytes as hashing prevHash, then the canonical text (both UTF-8).
  return sha256Hex(prevHash + canonicalEvent(event));
}

function actorId(actor: Actor): string | null {
  return actor.type === "system" ? actor.name : actor.id;
}

// On globalThis: Next bundles this module more than once in one process (the runtime that runs
// the sequencer, and the route handlers and server actions that record events).
const shared = globalThis as typeof globalThis & { __airlockAuditStaged?: Set<() => void> };
const stagedListeners = (shared.__airlockAuditStaged ??= new Set());

/** Calls `listener` after each commit that staged events in this process (./sequencer.ts's cue); returns the unsubscribe. */
export function onEventsStaged(listener: () => void): () => void {
  stagedListeners.add(listener);
  return () => stagedListeners.delete(listener);
}

/** Stages events, in this order, with the given time (recordAudit stamps now; tests backdate). */
export async function stageAuditEvents(tx: Pick<Tx, "$executeRaw">, inputs: readonly AuditEventInput[], at: Date): Promise<void> {
  if (inputs.length === 0) return;
  const rows = inputs.map((input) => {
    const data = canonicalJson(input.data ?? {});
    const event = {
      at,
      actorType: input.actor.type,
      actorId: actorId(input.actor),
      action: input.action,
      subjectType: input.subject.type,
      subjectId: input.subject.id ?? null,
      data: JSON.parse(data) as unknown,
    };
    return Prisma.sql`(${at.toISOString()}::timestamptz, ${event.actorType}, ${event.actorId}, ${event.action}, ${event.subjectType}, ${event.subjectId}, ${data}::jsonb, ${canonicalEvent(event)})`;
  });
  // One VALUES list: its rows take their ids (the chain's order) in the order written.
  await tx.$executeRaw`
    INSERT INTO "AuditPending" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "canonical")
    VALUES ${Prisma.join(rows)}`;
  afterCommit(() => stagedListeners.forEach((listener) => listener()));
}

export async function recordAudit(tx: Tx, input: AuditEventInput): Promise<void> {
  await stageAuditEvents(tx, [input], new Date());
}

/** Several events of one change, staged in one statement, in this order. */
export async function recordAuditEvents(tx: Tx, inputs: readonly AuditEventInput[]): Promise<void> {
  await stageAuditEvents(tx, inputs, new Date());
}
