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

export type DashboardSummary = {
  pendingReviews: number;
  oldestPendingAt: string | null;
  runsByStatus: { status: string; count: number }[];
  activeAgents: number;
};

export async function dashboardSummary(db: Db): Promise<DashboardSummary> {
  const [pending, oldest, byStatus, activeAgents] = await Promise.all([
    db.run.count({ where: { status: "pending_review" } }),
    db.run.findFirst({ where: { status: "pending_review" }, orderBy: { createdAt: "asc" }, select: { createdAt: true } }),
    db.run.groupBy({ by: ["status"], _count: { _all: true } }),
    db.agent.count({ where: { revokedAt: null } }),
  ]);
  return {
    pendingReviews: pending,
    oldestPendingAt: oldest?.createdAt.toISOString() ?? null,
    runsByStatus: byStatus.map((row) => ({ status: row.status, count: row._count._all })),
    activeAgents,
  };
}
