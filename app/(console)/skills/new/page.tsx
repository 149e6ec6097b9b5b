/**
 * Draft a skill from a pattern (`?fingerprint=<sha256>`): what the draft would hold — the code of
 * the pattern's newest retained run with its varying literals bound to arguments, the tests its
 * past runs make and why others were skipped, the inferred schemas — and the form that stores it
 * as a draft version (lib/skills/service.ts proposeSkill / draftSkill). Admins (skills:manage).
 * The script, its literals and past arguments are agents' text, rendered through Inert.
 */
import type { Metadata } from "next";
import Link from "next/link";
import { Card, EmptyState, PageHeader } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { proposeSkill } from "@/lib/skills/service";
import { draftSkillAction } from "../actions";
import { DraftSkillForm } from "../forms";
import { SkillCode, testsSummary } from "../parts";

export const metadata: Metadata = { title: "Draft a skill" };
export const dynamic = "force-dynamic";

type SearchParams = Record<string, string | string[] | undefined>;

export default userPage("skills:manage", async function DraftSkillPage(user, { searchParams }: { searchParams: Promise<SearchParams> }) {
  const { fingerprint } = await searchParams;
  if (typeof fingerprint !== "string" || fingerprint === "") {
    return (
      <>
        <PageHeader title="Draft a skill" />
        <EmptyState title="No pattern chosen">
          Choose &ldquo;Draft a skill&rdquo; on a pattern of the{" "}
          <Link href="/patterns" className="text-teal-800 underline">
            Patterns
          </Link>{" "}
          page.
        </EmptyState>
      </>
    );
  }
  const proposal = await proposeSkill(prisma(), user, fingerprint);
  return (
    <div className="space-y-5">
      <PageHeader
        title="Draft a skill"
        description="The pattern's newest retained script, with the literals that vary between its runs bound to arguments. Name it, describe it and choose its arguments; it is stored as a draft version, whose tests an admin replays and which two reviewers approve before agents can call it."
      />
      <Card title="Pattern">
        <dl className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1 text-sm">
          <dt className="text-slate-500">Fingerprint</dt>
          <dd className="font-mono text-xs break-all">{proposal.fingerprint}</dd>
          <dt className="text-slate-500">From run</dt>
          <dd>
            <Link href={`/runs/${proposal.exampleRunId}`} className="font-mono text-xs text-teal-800 underline-offset-2 hover:underline">
              {proposal.exampleRunId}
            </Link>
          </dd>
          <dt className="text-slate-500">Language</dt>
          <dd>{proposal.language}</dd>
          <dt className="text-slate-500">Tools</dt>
          <dd className="font-mono text-xs">{proposal.capabilitySet.length > 0 ? <Inert text={proposal.capabilitySet.join(", ")} /> : "none"}</dd>
        </dl>
      </Card>
      <Card title="Code">
        <p className="mb-2 text-xs text-slate-500">With the proposed arguments bound; binding others changes which literals become args.&lt;name&gt;.</p>
        <SkillCode code={proposal.code} label="Skill code" />
      </Card>
      <Card title="Tests">
        <p data-testid="skill-tests" className="text-sm text-slate-800">
          {testsSummary(proposal.tests.length, proposal.skipped)}
        </p>
        {proposal.tests.length > 0 ? (
          <ul className="mt-2 space-y-1 text-xs">
            {proposal.tests.map((test) => (
              <li key={test.runId} className="flex flex-wrap gap-2">
                <Link href={`/runs/${test.runId}`} className="font-mono text-teal-800 underline-offset-2 hover:underline">
                  {test.runId.slice(0, 8)}
                </Link>
                <span className="font-mono break-all text-slate-700">
                  <Inert text={JSON.stringify(test.arguments)} />
                </span>
                <span className="text-slate-500">
                  {test.calls.length} recorded call{test.calls.length === 1 ? "" : "s"}
                </span>
              </li>
            ))}
          </ul>
        ) : (
          <p className="mt-2 text-sm text-amber-800">Without tests the draft cannot be approved: no past run could be replayed against it.</p>
        )}
      </Card>
      <Card title="Name, arguments and schemas">
        <DraftSkillForm
          fingerprint={proposal.fingerprint}
          name={proposal.name}
          description={proposal.description}
          inputs={proposal.inputs}
          inputSchema={JSON.stringify(proposal.inputSchema, null, 2)}
          outputSchema={JSON.stringify(proposal.outputSchema, null, 2)}
          action={draftSkillAction}
        />
      </Card>
    </div>
  );
});
