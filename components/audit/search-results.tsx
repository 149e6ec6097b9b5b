/** Search results: one row per run, newest first; each run's full timeline is one click away. */
import Link from "next/link";
import { Inert } from "@/components/ui/inert";
import { EmptyState, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";
import type { RunSearchItem } from "@/lib/audit/search";

export function AuditSearchResults({ rows, nextHref }: { rows: RunSearchItem[]; nextHref: string | null }) {
  if (rows.length === 0) return <EmptyState title="No runs match">Try fewer words or filters.</EmptyState>;
  return (
    <div className="space-y-3">
      <Table caption="Runs matching the search" headers={["Submitted", "Agent", "Owner", "Purpose", "Decision", "Status", "Code sha256", ""]}>
        {rows.map((row) => (
          <tr key={row.id}>
            <Td className="whitespace-nowrap">
              <Time iso={row.createdAt} />
            </Td>
            <Td>
              <Inert text={row.agent} />
            </Td>
            <Td className="text-xs">{row.owner}</Td>
            <Td>
              <Inert text={row.purpose} />
            </Td>
            <Td>{row.decision ?? "—"}</Td>
            <Td>
              <StatusBadge status={row.status} errorCode={row.errorCode} />
            </Td>
            <Td className="font-mono text-xs">
              <span title={row.codeSha256}>{row.codeSha256.slice(0, 12)}…</span>
            </Td>
            <Td>
              <Link href={`/audit/runs/${row.id}`} className="whitespace-nowrap text-teal-700 underline">
                Timeline
              </Link>
            </Td>
          </tr>
        ))}
      </Table>
      {nextHref ? (
        <Link href={nextHref} className="inline-block text-sm text-teal-700 underline" rel="next">
          Older runs →
        </Link>
      ) : null}
    </div>
  );
}
