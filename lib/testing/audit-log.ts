/**
 * `appendBackdated(db, at, action)`: appends a correctly chained audit event with a time in the
 * past, as if the log were older than it is (recordAudit always stamps now). For tests of what
 * verification says about old, uncovered events; INSERT is all it needs, so the log stays valid.
 */
import type { PrismaClient } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import { chainHash, GENESIS_HASH } from "@/lib/audit/record";

export async function appendBackdated(db: PrismaClient, at: Date, action = "test.old", data: Prisma.InputJsonObject = {}): Promise<bigint> {
  const last = await db.auditEvent.findFirst({ orderBy: { id: "desc" }, select: { hash: true } });
  const prevHash = last?.hash ?? GENESIS_HASH;
  const event = { at, actorType: "system", actorId: "test", action, subjectType: "thing", subjectId: null, data };
  const row = await db.auditEvent.create({ data: { ...event, prevHash, hash: chainHash(prevHash, event) }, select: { id: true } });
  return row.id;
}
