import type { Metadata } from "next";
import { DraftEditor } from "@/components/policy/draft-editor";
import { Badge, Card, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { hasScope } from "@/lib/contracts/scopes";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { listPolicyVersions } from "@/lib/policy/versions-presenter";
import { draftAction } from "./actions";
import { PlainCodeView } from "@/components/run/code-view";

export const metadata: Metadata = { title: "Policies" };

export default userPage("policies:read", async function PoliciesPage(user) {
  const db = prisma();
  const versions = await listPolicyVersions(db);
  const published = await db.policyVersion.findFirst({ where: { status: "published" }, orderBy: { version: "desc" }, select: { text: true, version: true } });
  return (
    <>
      <PageHeader
        title="Policies"
        description="Cedar policies decide whether a run is allowed, escalated to reviewers, or denied — always with the deciding policies' reasons."
      />
      {versions.length === 0 ? (
        <EmptyState title="No policy versions yet">Until a policy is published, every run is denied.</EmptyState>
      ) : (
        <Table caption="Policy versions" headers={["Version", "Status", "Created", "By", "Published", "Lines"]}>
          {versions.map((v) => (
            <tr key={v.version}>
              <Td>v{v.version}</Td>
              <Td>
                <Badge tone={v.status === "published" ? "good" : "neutral"}>{v.status}</Badge>
              </Td>
              <Td>
                <Time iso={v.createdAt} />
              </Td>
              <Td>{v.createdBy ?? "system"}</Td>
              <Td>{v.publishedAt ? <Time iso={v.publishedAt} /> : "—"}</Td>
              <Td>{v.lines}</Td>
            </tr>
          ))}
        </Table>
      )}
      {hasScope(user, "policies:manage") ? (
        <Card title={`Draft a new version${published ? ` (starting from v${published.version})` : ""}`} className="mt-6">
          <DraftEditor initialText={published?.text ?? ""} action={draftAction} />
        </Card>
      ) : published ? (
        <Card title={`Published policy v${published.version}`} className="mt-6">
          <PlainCodeView code={published.text} label="Published policy" />
        </Card>
      ) : null}
    </>
  );
});
