/**
 * sequenceAudit(db): chains the staged audit events (lib/audit/record.ts) committed before it was
 * called, through the database's airlock_audit_sequence() (migration
 * 20261202180000_audit_staging), which takes the chain's advisory lock, hashes each event after
 * its predecessor and moves it out of "AuditPending", BATCH events per transaction. Concurrent
 * writers so share one lock and one commit per batch instead of one each. Returns how many
 * events it chained; with nothing staged it costs one query and takes no lock.
 *
 * Readers call it before reading the log, so a read sees every committed event: lib/db.ts does
 * it for every Prisma read of AuditEvent, and the raw-SQL readers call it themselves. Running
 * processes also call it in the background (lib/audit/sequencer.ts).
 */
import type { PrismaClient } from "@/lib/generated/prisma/client";

/** Events chained per database transaction. */
export const BATCH = 1000;

export async function sequenceAudit(db: Pick<PrismaClient, "$queryRaw">): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await db.$queryRaw<{ chained: number }[]>`SELECT "airlock_audit_sequence"(${BATCH}::integer) AS chained`;
    const chained = row?.chained ?? 0;
    total += chained;
    if (chained < BATCH) return total;
  }
}
