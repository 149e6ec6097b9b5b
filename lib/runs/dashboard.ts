/**
 * Read model of the dashboard: the numbers people would rather see than read — queue size and
 * oldest wait, runs by outcome per day, approval latency, the busiest agents and tools. Plain
 * DTOs from a handful of aggregate queries (no per-row work in the app).
 */
import { sequenceAudit } from "@/lib/db/audit-sequence";
import "server-only";
import type { Db } from "@/lib/db";
import { inReviewQueue } from "./review-queue";

export type Dashboard = {
  /** Runs in the review queue: waiting for a review, or for the release of their held result. */
  pendingReviews: number;
  oldestPendingAt: string | null;
  running: number;
  activeAgents: number;
  days: { day: string; succeeded: number; failed: number; denied: number; other: number }[];
  approvalLatencyMinutes: { p50: number | null; p95: number | null; samples: number };
  topAgents: { name: string; runs: number }[];
  topTools: { tool: string; calls: number }[];
};

const DAYS = 14;

export async function loadDashboard(db: Db): Promise<Dashboard> {
  await sequenceAudit(db);
  const [pending, oldest, running, activeAgents, perDay, latency, topAgents, topTools] = await Promise.all([
    // What the review queue holds (./review-queue.ts): runs to review and results to release.
    db.run.count({ where: inReviewQueue() }),
    db.run.findFirst({ where: inReviewQueue(), orderBy: { createdAt: "asc" }, select: { createdAt: true } }),
    db.run.count({ where: { status: "running" } }),
    db.agent.count({ where: { revokedAt: null } }),
    db.$queryRaw<{ day: Date; status: string; n: bigint }[]>`
      SELECT date_trunc('day', "createdAt") AS day, status::text AS status, count(*) AS n
      FROM "Run" WHERE "createdAt" >= date_trunc('day', now()) - ${DAYS - 1} * interval '1 day'
      GROUP BY 1, 2`,
    db.$queryRaw<{ p50: number | null; p95: number | null; samples: bigint }[]>`
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY minutes) AS p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY minutes) AS p95,
             count(*) AS samples
      FROM (
        SELECT extract(epoch FROM (e.at - r."createdAt")) / 60 AS minutes
        FROM "AuditEvent" e JOIN "Run" r ON r.id::text = e."subjectId"
        WHERE e."subjectType" = 'run' AND e.action = 'run.approved' AND e.at >= now() - interval '30 days'
      ) latencies`,
    db.$queryRaw<{ name: string; runs: bigint }[]>`
      SELECT a.name, count(*) AS runs FROM "Run" r JOIN "Agent" a ON a.id = r."agentId"
      WHERE r."createdAt" >= now() - interval '7 days' GROUP BY a.name ORDER BY runs DESC LIMIT 5`,
    db.$queryRaw<{ tool: string; calls: bigint }[]>`
      SELECT server || '.' || tool AS tool, count(*) AS calls FROM "RunToolCall"
      WHERE at >= now() - interval '7 days' AND outcome NOT IN ('intercepted', 'refused') GROUP BY 1 ORDER BY calls DESC LIMIT 5`,
  ]);

  const days: Dashboard["days"] = [];
  const today = new Date();
  today.setUTCHours(0, 0, 0, 0);
  for (let i = DAYS - 1; i >= 0; i--) {
    const day = new Date(today.getTime() - i * 86_400_000).toISOString().slice(0, 10);
    days.push({ day, succeeded: 0, failed: 0, denied: 0, other: 0 });
  }
  for (const row of perDay) {
    const entry = days.find((d) => d.day === row.day.toISOString().slice(0, 10));
    if (!entry) continue;
    const n = Number(row.n);
    if (row.status === "succeeded") entry.succeeded += n;
    else if (row.status === "failed" || row.status === "timed_out") entry.failed += n;
    else if (row.status === "denied" || row.status === "rejected") entry.denied += n;
    else entry.other += n;
  }
  const round = (value: number | null) => (value === null ? null : Math.round(value * 10) / 10);
  return {
    pendingReviews: pending,
    oldestPendingAt: oldest?.createdAt.toISOString() ?? null,
    running,
    activeAgents,
    days,
    approvalLatencyMinutes: { p50: round(latency[0]?.p50 ?? null), p95: round(latency[0]?.p95 ?? null), samples: Number(latency[0]?.samples ?? 0) },
    topAgents: topAgents.map((row) => ({ name: row.name, runs: Number(row.runs) })),
    topTools: topTools.map((row) => ({ tool: row.tool, calls: Number(row.calls) })),
  };
}
