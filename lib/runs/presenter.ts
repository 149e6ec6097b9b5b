/** Read models of runs for console pages: plain DTOs, never Prisma objects. */
import "server-only";
import type { Db } from "@/lib/db";

export type RunListItem = {
  id: string;
  agent: string;
  status: string;
  purpose: string;
  decision: string | null;
  createdAt: string;
};

export async function listRuns(db: Db, options: { status?: "pending_review"; take?: number } = {}): Promise<RunListItem[]> {
  const rows = await db.run.findMany({
    where: options.status ? { status: options.status } : undefined,
    orderBy: { createdAt: options.status ? "asc" : "desc" },
    take: options.take ?? 50,
    include: { agent: { select: { name: true } } },
  });
  return rows.map((run) => ({
    id: run.id,
    agent: run.agent.name,
    status: run.status,
    purpose: run.purpose,
    decision: run.decision,
    createdAt: run.createdAt.toISOString(),
  }));
}
