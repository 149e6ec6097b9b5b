/**
 * What an operator watches, for `/api/health` and `/api/metrics` (app/api/…/route.ts).
 *
 * - health(db): whether this process answers and reaches PostgreSQL, and nothing else: no run,
 *   agent or tool is named, so it may be served to anyone.
 * - metrics(db): the Prometheus text exposition (version 0.0.4) of
 *   airlock_queue_depth (runs queued), airlock_oldest_wait_seconds (how long the oldest queued run
 *   has waited), airlock_runs_total{status} (runs by status), airlock_executor_slots_busy (executor
 *   slots taken), airlock_audit_append_seconds (how long the oldest staged audit event has waited
 *   to be chained, lib/audit/record.ts), airlock_audit_pending_events and
 *   airlock_upstreams_unavailable (configured upstreams this process could not connect to, which
 *   its caller counts: the log names them). Counts only: no run content, no names.
 */
import type { Db } from "@/lib/db";
import { RUN_STATUSES } from "@/lib/contracts/run-states";

export type Health = { status: "ok" | "unavailable"; database: "ok" | "unreachable"; at: string };

export async function health(db: Db): Promise<Health> {
  const at = new Date().toISOString();
  try {
    await db.$queryRaw`SELECT 1`;
    return { status: "ok", database: "ok", at };
  } catch {
    return { status: "unavailable", database: "unreachable", at };
  }
}

type Gauge = { name: string; help: string; type: "gauge" | "counter"; samples: { labels?: Record<string, string>; value: number }[] };

function exposition(gauges: Gauge[]): string {
  const lines: string[] = [];
  for (const gauge of gauges) {
    lines.push(`# HELP ${gauge.name} ${gauge.help}`, `# TYPE ${gauge.name} ${gauge.type}`);
    for (const { labels, value } of gauge.samples) {
      const label = labels
        ? `{${Object.entries(labels)
            .map(([k, v]) => `${k}="${v}"`)
            .join(",")}}`
        : "";
      lines.push(`${gauge.name}${label} ${Number.isFinite(value) ? value : 0}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

export async function metrics(db: Db, here: { unavailableUpstreams: number } = { unavailableUpstreams: 0 }): Promise<string> {
  const [byStatus, [queue], slots, [audit]] = await Promise.all([
    db.run.groupBy({ by: ["status"], _count: { _all: true } }),
    db.$queryRaw<{ depth: number; oldest: number | null }[]>`
      SELECT count(*)::int AS depth, extract(epoch FROM now() - min("updatedAt"))::float8 AS oldest FROM "Run" WHERE status = 'queued'`,
    db.runSlot.count(),
    db.$queryRaw<{ pending: number; oldest: number | null }[]>`
      SELECT count(*)::int AS pending, extract(epoch FROM now() - min("at"))::float8 AS oldest FROM "AuditPending"`,
  ]);
  const counts = new Map(byStatus.map((row) => [row.status as string, row._count._all]));
  return exposition([
    { name: "airlock_queue_depth", help: "Runs queued for an executor.", type: "gauge", samples: [{ value: queue?.depth ?? 0 }] },
    {
      name: "airlock_oldest_wait_seconds",
      help: "How long the oldest queued run has waited for an executor, in seconds.",
      type: "gauge",
      samples: [{ value: Math.max(0, queue?.oldest ?? 0) }],
    },
    {
      name: "airlock_runs_total",
      help: "Runs by their current status.",
      type: "gauge",
      samples: RUN_STATUSES.map((status) => ({ labels: { status }, value: counts.get(status) ?? 0 })),
    },
    { name: "airlock_executor_slots_busy", help: "Executor slots taken by runs, over every executor.", type: "gauge", samples: [{ value: slots }] },
    {
      name: "airlock_audit_append_seconds",
      help: "How long the oldest staged audit event has waited to be chained, in seconds (0 when none waits).",
      type: "gauge",
      samples: [{ value: Math.max(0, audit?.oldest ?? 0) }],
    },
    { name: "airlock_audit_pending_events", help: "Audit events staged and not chained yet.", type: "gauge", samples: [{ value: audit?.pending ?? 0 }] },
    {
      name: "airlock_upstreams_unavailable",
      help: "Configured upstream MCP servers this process could not connect to (tried every 30 s; the log names them).",
      type: "gauge",
      samples: [{ value: here.unavailableUpstreams }],
    },
  ]);
}
