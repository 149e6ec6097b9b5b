/** Read model of the audit log for the console (the full search comes with the audit issue). */
import "server-only";
import type { Db } from "@/lib/db";

export type AuditListItem = {
  id: string;
  at: string;
  actor: string;
  action: string;
  subject: string;
  hash: string;
};

export async function recentAuditEvents(db: Db, take = 100): Promise<AuditListItem[]> {
  const rows = await db.auditEvent.findMany({ orderBy: { id: "desc" }, take });
  return rows.map((row) => ({
    id: row.id.toString(),
    at: row.at.toISOString(),
    actor: row.actorId ? `${row.actorType}:${row.actorId}` : row.actorType,
    action: row.action,
    subject: row.subjectId ? `${row.subjectType}:${row.subjectId}` : row.subjectType,
    hash: row.hash,
  }));
}
