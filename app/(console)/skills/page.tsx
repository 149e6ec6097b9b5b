/**
 * Skills: every skill with its versions (status, last replay, approvals), then every standing
 * approval with its uses and state. Admins and reviewers (skills:read); admins (skills:manage)
 * confirm another admin's standing approval or revoke one here.
 */
import type { Metadata } from "next";
import Link from "next/link";
import { Badge, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { listSkills, type SkillVersionRow, APPROVALS_TO_PUBLISH } from "@/lib/skills/service";
import { listStandingApprovals } from "@/lib/skills/standing";
import { confirmStandingAction, revokeStandingAction } from "./actions";
import { reportText } from "./parts";
import { StandingTable } from "./standing-table";

export const metadata: Metadata = { title: "Skills" };
export const dynamic = "force-dynamic";

const STATUS_TONE = { draft: "warn", published: "good", rejected: "bad" } as const;

function Replay({ version }: { version: SkillVersionRow }) {
  if (!version.report) return <span className="text-slate-500">not run</span>;
  return (
    <>
      {reportText(version.report)}
      {version.report.current ? null : <span className="text-amber-800"> (of other content)</span>}
    </>
  );
}

export default userPage("skills:read", async function SkillsPage(user) {
  const db = prisma();
  const skills = await listSkills(db, user);
  const standing = await listStandingApprovals(db, user);
  const canManage = hasScope(user, "skills:manage");
  return (
    <>
      <PageHeader
        title="Skills"
        description="Patterns promoted to reviewed, versioned functions agents call with run_skill. An admin drafts a version from a pattern and replays its tests against the runs it came from; two reviewers approve it, which publishes it. Standing approvals let named agents run a published version within bounds without review, once two admins agree."
      />
      {skills.length === 0 ? (
        <EmptyState title="No skill yet">
          {canManage ? (
            <>
              Draft one from a pattern on the{" "}
              <Link href="/patterns" className="text-teal-800 underline">
                Patterns
              </Link>{" "}
              page.
            </>
          ) : (
            "An admin drafts skills from the patterns of runs."
          )}
        </EmptyState>
      ) : (
        <Table caption="Skills" headers={["Skill", "Version", "Status", "Description", "Tests", "Replay", "Approvals", "Drafted"]}>
          {skills.flatMap((skill) =>
            skill.versions.map((version) => (
              <tr key={version.id} data-testid={`skill-${skill.name}-v${version.version}`}>
                <Td className="font-mono text-xs">{skill.name}</Td>
                <Td className="whitespace-nowrap">
                  <Link href={`/skills/${version.id}`} className="font-mono text-xs text-teal-800 underline-offset-2 hover:underline">
                    {skill.name} v{version.version}
                  </Link>
                </Td>
                <Td>
                  <Badge tone={STATUS_TONE[version.status]}>{version.status}</Badge>
                </Td>
                <Td>
                  <Inert text={version.description} />
                </Td>
                <Td>{version.tests}</Td>
                <Td className="whitespace-nowrap">
                  <Replay version={version} />
                </Td>
                <Td className="whitespace-nowrap">
                  {version.approvals} of {APPROVALS_TO_PUBLISH}
                </Td>
                <Td className="text-xs">
                  <Time iso={version.createdAt} />
                </Td>
              </tr>
            )),
          )}
        </Table>
      )}
      <section aria-labelledby="standing" className="mt-8">
        <h2 id="standing" className="mb-3 text-lg font-semibold">
          Standing approvals
        </h2>
        {standing.length === 0 ? (
          <EmptyState title="No standing approval yet">An admin proposes one on a published version&apos;s page; a second admin confirms it.</EmptyState>
        ) : (
          <StandingTable rows={standing} viewer={{ email: user.email, canManage }} confirmAction={confirmStandingAction} revokeAction={revokeStandingAction} />
        )}
      </section>
    </>
  );
});
