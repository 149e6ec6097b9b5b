import type { Metadata } from "next";
import { EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { recentAuditEvents } from "@/lib/audit/presenter";

export const metadata: Metadata = { title: "Audit" };

export default async function AuditPage() {
  await requireUserPage("audit:read");
  const events = await recentAuditEvents(prisma());
  return (
    <>
      <PageHeader title="Audit log" description="The latest events of the append-only, hash-chained log." />
      {events.length === 0 ? (
        <EmptyState title="No events yet" />
      ) : (
        <Table caption="Audit events" headers={["#", "Time", "Action", "Actor", "Subject", "Hash"]}>
          {events.map((event) => (
            <tr key={event.id}>
              <Td>{event.id}</Td>
              <Td>
                <Time iso={event.at} />
              </Td>
              <Td className="font-mono text-xs">{event.action}</Td>
              <Td className="font-mono text-xs">{event.actor}</Td>
              <Td className="font-mono text-xs">{event.subject}</Td>
              <Td className="font-mono text-xs" >
                <span title={event.hash}>{event.hash.slice(0, 12)}…</span>
              </Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
