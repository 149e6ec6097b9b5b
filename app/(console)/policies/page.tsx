import type { Metadata } from "next";
import { Badge, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { listPolicyVersions } from "@/lib/policy/versions-presenter";

export const metadata: Metadata = { title: "Policies" };

export default async function PoliciesPage() {
  await requireUserPage("policies:read");
  const versions = await listPolicyVersions(prisma());
  return (
    <>
      <PageHeader title="Policies" description="Cedar policy versions that decide whether a run is allowed, escalated or denied." />
      {versions.length === 0 ? (
        <EmptyState title="No policy versions yet">Until a policy is published, every run is denied.</EmptyState>
      ) : (
        <Table caption="Policy versions" headers={["Version", "Status", "Created", "Published by", "Lines"]}>
          {versions.map((v) => (
            <tr key={v.version}>
              <Td>v{v.version}</Td>
              <Td>
                <Badge tone={v.status === "published" ? "good" : "neutral"}>{v.status}</Badge>
              </Td>
              <Td>
                <Time iso={v.createdAt} />
              </Td>
              <Td>{v.publishedBy ?? "—"}</Td>
              <Td>{v.lines}</Td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}
