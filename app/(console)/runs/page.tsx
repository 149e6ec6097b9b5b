import type { Metadata } from "next";
import { Badge, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { listRuns } from "@/lib/runs/presenter";

export const metadata: Metadata = { title: "Runs" };

export default async function RunsPage() {
  await requireUserPage("runs:read");
  const runs = await listRuns(prisma());
  return (
    <>
      <PageHeader title="Runs" description="Every script agents have submitted, newest first." />
      {runs.length === 0 ? (
        <EmptyState title="No runs yet">When an agent submits a script through the MCP endpoint, it is listed here.</EmptyState>
      ) : (
        <Table caption="Runs" headers={["Submitted", "Agent", "Purpose", "Status"]}>
          {runs.map((run) => (
            <tr key={run.id}>
              <Td>
                <Time iso={run.createdAt} />
              </Td>
              <Td>{run.agent}</Td>
              <Td>{run.purpose}</Td>
              <Td>
                <Badge>{run.status.replaceAll("_", " ")}</Badge>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
