import type { Metadata } from "next";
import { ApprovePolicyForm } from "@/components/policy/approve-form";
import { DraftEditor } from "@/components/policy/draft-editor";
import { PublishedPolicy } from "@/components/policy/published-policy";
import { Badge, Card, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { hasScope } from "@/lib/contracts/scopes";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { publishedPolicyView } from "@/lib/policy/published-presenter";
import { listPolicyProposals, listPolicyVersions } from "@/lib/policy/versions-presenter";
import { approveAction, draftAction } from "./actions";
import { DiffView } from "@/components/run/code-view";

export const metadata: Metadata = { title: "Policies" };

export default userPage("policies:read", async function PoliciesPage(user) {
  const db = prisma();
  const versions = await listPolicyVersions(db);
  const proposals = await listPolicyProposals(db);
  const canManage = hasScope(user, "policies:manage");
  const view = await publishedPolicyView(db);
  // The draft starts from the published text exactly as stored (the view's text is for reading).
  const published = canManage
    ? await db.policyVersion.findFirst({ where: { status: "published" }, orderBy: { version: "desc" }, select: { text: true, version: true } })
    : null;
  return (
    <>
      <PageHeader
        title="Policies"
        description="Cedar policies decide whether a run is allowed, escalated to reviewers, or denied — always with the deciding policies' reasons. An admin proposes a version; a second admin approves it, which publishes it."
      />
      {proposals.map((p) => (
        <Card key={p.version} title={`Proposed v${p.version} by ${p.proposedBy?.email ?? "system"}`} className="mb-4">
          <p className="mb-2 text-sm text-slate-600">What it changes against the published version:</p>
          <DiffView diff={p.change} label={`Changes in v${p.version}`} sameText="Identical to the published version." />
          {p.proposedBy?.id === user.id ? (
            <p role="status" className="mt-3 text-sm text-amber-800">
              You proposed this version; it is waiting for a second admin to approve it.
            </p>
          ) : canManage ? (
            <ApprovePolicyForm version={p.version} action={approveAction} />
          ) : null}
        </Card>
      ))}
      {view ? (
        <Card title={`Published policy v${view.version}`} className="mb-6">
          <PublishedPolicy view={view} />
        </Card>
      ) : null}
      {versions.length === 0 ? (
        <EmptyState title="No policy versions yet">Until a policy is published, every run is denied.</EmptyState>
      ) : (
        <Table caption="Policy versions" headers={["Version", "Status", "Created", "By", "Published", "Approved by", "Lines"]}>
          {versions.map((v) => (
            <tr key={v.version}>
              <Td>v{v.version}</Td>
              <Td>
                <Badge tone={v.status === "published" ? "good" : v.status === "proposed" ? "warn" : "neutral"}>{v.status}</Badge>
              </Td>
              <Td>
                <Time iso={v.createdAt} />
              </Td>
              <Td>{v.createdBy ?? "system"}</Td>
              <Td>{v.publishedAt ? <Time iso={v.publishedAt} /> : "—"}</Td>
              <Td>{v.publishedBy ?? (v.publishedAt ? "system" : "—")}</Td>
              <Td>{v.lines}</Td>
            </tr>
          ))}
        </Table>
      )}
      {canManage ? (
        <Card title={`Draft a new version${published ? ` (starting from v${published.version})` : ""}`} className="mt-6">
          <DraftEditor initialText={published?.text ?? ""} action={draftAction} />
        </Card>
      ) : null}
    </>
  );
});
