import type { Metadata } from "next";
import { headers } from "next/headers";
import { RankedBars, RunsPerDay } from "@/components/dashboard/charts";
import { NoRunsYet } from "@/components/dashboard/no-runs-yet";
import { Card, PageHeader } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { hasRuns } from "@/lib/review/runs-presenter";
import { loadDashboard } from "@/lib/runs/dashboard";

export const metadata: Metadata = { title: "Dashboard" };

function minutes(value: number | null): string {
  if (value === null) return "—";
  return value < 60 ? `${value} min` : `${(value / 60).toFixed(1)} h`;
}

/** The MCP endpoint as agents reach it: AIRLOCK_PUBLIC_URL, or the Host this page was asked for (proxy.ts checked it). */
async function mcpEndpoint(): Promise<string> {
  const { AIRLOCK_PUBLIC_URL, AIRLOCK_HOST, PORT } = env();
  if (AIRLOCK_PUBLIC_URL) return `${AIRLOCK_PUBLIC_URL.replace(/\/$/, "")}/api/mcp`;
  return `http://${(await headers()).get("host") ?? `${AIRLOCK_HOST}:${PORT}`}/api/mcp`;
}

export default userPage("dashboard:read", async function DashboardPage(user) {
  const [d, anyRuns] = await Promise.all([loadDashboard(prisma()), hasRuns(prisma())]);
  return (
    <>
      <PageHeader title="Dashboard" description={`Signed in as ${user.name} (${user.role}).`} />
      <div className="grid gap-4 sm:grid-cols-2 lg:grid-cols-4">
        <Card title="Waiting for reviewers">
          <p className="text-3xl font-semibold" data-testid="pending-count">
            {d.pendingReviews}
          </p>
          <p className="mt-1 text-sm text-slate-600">
            {d.oldestPendingAt ? (
              <>
                oldest since <Time iso={d.oldestPendingAt} />
              </>
            ) : (
              "nothing waiting"
            )}
          </p>
        </Card>
        <Card title="Running now">
          <p className="text-3xl font-semibold">{d.running}</p>
        </Card>
        <Card title="Approval latency (30 days)">
          <p className="text-3xl font-semibold">{minutes(d.approvalLatencyMinutes.p50)}</p>
          <p className="mt-1 text-sm text-slate-600">
            p50 · p95 {minutes(d.approvalLatencyMinutes.p95)} · {d.approvalLatencyMinutes.samples}{" "}
            {d.approvalLatencyMinutes.samples === 1 ? "approval" : "approvals"}
          </p>
        </Card>
        <Card title="Active agents">
          <p className="text-3xl font-semibold">{d.activeAgents}</p>
        </Card>
      </div>
      <div className="mt-4 grid gap-4 lg:grid-cols-3">
        <Card title="Runs by outcome, last 14 days" className="lg:col-span-3">
          <RunsPerDay
            days={d.days}
            empty={
              anyRuns ? <p className="py-6 text-center text-sm text-slate-500">No runs in the last 14 days.</p> : <NoRunsYet endpoint={await mcpEndpoint()} />
            }
          />
        </Card>
        <Card title="Top agents (7 days)">
          <RankedBars rows={d.topAgents.map((a) => ({ label: a.name, value: a.runs }))} empty="No runs this week." />
        </Card>
        <Card title="Top tools (7 days)">
          <RankedBars rows={d.topTools.map((t) => ({ label: t.tool, value: t.calls }))} empty="No tool calls this week." />
        </Card>
      </div>
    </>
  );
});
