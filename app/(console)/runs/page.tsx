import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { recentRuns } from "@/lib/review/queue-presenter";
import { Inert } from "@/components/ui/inert";

export const metadata: Metadata = { title: "Runs" };

export default userPage("runs:read", async function RunsPage() {
  const runs = await recentRuns(prisma());
  return (
    <>
      <PageHeader title="Runs" description="Every script agents have submitted, newest first." />
      {runs.length === 0 ? (
        <EmptyState title="No runs yet">When an agent submits a script through the MCP endpoint, it is listed here.</EmptyState>
      ) : (
        <Table caption="Runs" headers={["Submitted", "Agent", "Purpose", "Status"]}>
          {runs.map((run) => (
            <tr key={run.id} data-testid={`run-row-${run.id}`}>
              <Td>
                <Time iso={run.createdAt} />
              </Td>
              <Td>
                <Inert text={run.agent} />
              </Td>
              <Td>
                <Link href={`/runs/${run.id}`} className="font-medium text-teal-800 underline-offset-2 hover:underline">
                  <Inert text={run.purpose} />
                </Link>
              </Td>
              <Td>
                <StatusBadge status={run.status} />
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
});
