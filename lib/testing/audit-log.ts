/**
 * `appendBackdated(db, at, action)`: appends a correctly chained audit event with a time in the
 * past, as if the log were older than it is (recordAudit always stamps now). For tests of what
 * verification says about old, uncovered events; it stages the event as recordAudit does and
 * chains it, so the log stays valid.
 */
import type { PrismaClient } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import { stageAuditEvents } from "@/lib/audit/record";
import { sequenceAudit } from "@/lib/db/audit-sequence";

export async function appendBackdated(db: PrismaClient, at: Date, action = "test.old", data: Prisma.InputJsonObject = {}): Promise<bigint> {
  await stageAuditEvents(db, [{ actor: { type: "system", name: "test" }, action, subject: { type: "thing" }, data }], at);
  await sequenceAudit(db);
  const row = await db.auditEvent.findFirstOrThrow({ orderBy: { id: "desc" }, select: { id: true } });
  return row.id;
}
