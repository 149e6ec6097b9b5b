import type { Metadata } from "next";
import { Card, PageHeader } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { dashboardSummary } from "@/lib/runs/presenter";

export const metadata: Metadata = { title: "Dashboard" };

export default async function DashboardPage() {
  const user = await requireUserPage("dashboard:read");
  const summary = await dashboardSummary(prisma());
  const total = summary.runsByStatus.reduce((sum, row) => sum + row.count, 0);
  return (
    <>
      <PageHeader title="Dashboard" description={`Signed in as ${user.name} (${user.role}).`} />
      <div className="grid gap-4 sm:grid-cols-3">
        <Card title="Waiting for review">
          <p className="text-3xl font-semibold" data-testid="pending-count">
            {summary.pendingReviews}
          </p>
          <p className="mt-1 text-sm text-slate-600">
            {summary.oldestPendingAt ? (
              <>
                oldest since <Time iso={summary.oldestPendingAt} />
              </>
            ) : (
              "nothing waiting"
            )}
          </p>
        </Card>
        <Card title="Runs">
          <p className="text-3xl font-semibold">{total}</p>
          <p className="mt-1 text-sm text-slate-600">{total === 0 ? "no agent has submitted a run yet" : "all time"}</p>
        </Card>
        <Card title="Active agents">
          <p className="text-3xl font-semibold">{summary.activeAgents}</p>
        </Card>
      </div>
      {summary.runsByStatus.length > 0 ? (
        <Card title="Runs by status" className="mt-4">
          <ul className="space-y-1 text-sm">
            {summary.runsByStatus.map((row) => (
              <li key={row.status} className="flex justify-between">
                <span>{row.status.replaceAll("_", " ")}</span>
                <span className="font-medium">{row.count}</span>
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
    </>
  );
}
