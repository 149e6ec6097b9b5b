import type { Metadata } from "next";
import { EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { listRuns } from "@/lib/runs/presenter";

export const metadata: Metadata = { title: "Queue" };

export default async function QueuePage() {
  await requireUserPage("runs:review");
  const runs = await listRuns(prisma(), { status: "pending_review" });
  return (
    <>
      <PageHeader title="Review queue" description="Runs that policy escalated to a human, oldest first." />
      {runs.length === 0 ? (
        <EmptyState title="Nothing to review">Escalated runs appear here when agents submit them.</EmptyState>
      ) : (
        <Table caption="Runs waiting for review" headers={["Submitted", "Agent", "Purpose"]}>
          {runs.map((run) => (
            <tr key={run.id}>
              <Td>
                <Time iso={run.createdAt} />
              </Td>
              <Td>{run.agent}</Td>
              <Td>{run.purpose}</Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
