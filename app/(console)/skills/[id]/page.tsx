/**
 * One skill version: its status, description, code, schemas, tests and last replay report, the
 * reviews and approvals, and its standing approvals. Admins and reviewers (skills:read). Admins
 * (skills:manage) replay a draft's tests and propose, confirm or revoke standing approvals of a
 * published version; reviewers (skills:review) approve or reject a draft, bound to its content
 * digest. The code, descriptions, arguments, comments and JSON are rendered as text (Inert).
 */
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { Section } from "@/components/run/run-sections";
import { Inert } from "@/components/ui/inert";
import { Badge, EmptyState, PageHeader } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { getSkillVersion, testReportOf, type SkillTest, APPROVALS_TO_PUBLISH } from "@/lib/skills/service";
import { listStandingApprovals } from "@/lib/skills/standing";
import { confirmStandingAction, proposeStandingAction, replaySkillAction, reviewSkillAction, revokeStandingAction } from "../actions";
import { ProposeStandingForm, ReplayForm, ReviewSkillForm } from "../forms";
import { Json, reportText, SkillCode, testsSummary } from "../parts";
import { StandingTable } from "../standing-table";

export const metadata: Metadata = { title: "Skill" };
export const dynamic = "force-dynamic";

const STATUS_TONE = { draft: "warn", published: "good", rejected: "bad" } as const;
const VERDICT_WORD: Record<string, string> = { approve: "approved", reject: "rejected", request_changes: "requested changes" };
const DAY_MS = 86_400_000;

export default userPage("skills:read", async function SkillVersionPage(user, { params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const db = prisma();
  const version = await getSkillVersion(db, user, id);
  if (!version) notFound();
  const standing = await listStandingApprovals(db, user, { skillVersionId: version.id });
  const canManage = hasScope(user, "skills:manage");
  const canReview = hasScope(user, "skills:review");
  const label = `${version.skill.name} v${version.version}`;
  const tests = (Array.isArray(version.tests) ? version.tests : []) as SkillTest[];
  const report = testReportOf(version.testReport);
  const stale = report !== null && report.contentDigest !== version.contentDigest;
  const approvals = version.reviews.filter((review) => review.verdict === "approve").length;
  const mine = version.reviews.find((review) => review.reviewerId === user.id);
  const draft = version.status === "draft";
  // The default end of a new standing approval: 30 days from now, as a UTC datetime-local value.
  const notAfter = new Date(Date.now() + 30 * DAY_MS).toISOString().slice(0, 16);
  return (
    <div className="space-y-5">
      <div>
        <PageHeader title={label} />
        <div className="-mt-4 mb-2 flex flex-wrap items-center gap-2 text-sm text-slate-700">
          <Badge tone={STATUS_TONE[version.status]} data-testid="skill-status">
            {version.status}
          </Badge>
          <Badge>{version.language}</Badge>
          <span>
            drafted by {version.draftedBy.email} at <Time iso={version.createdAt.toISOString()} />
          </span>
          {version.decidedAt ? (
            <span>
              {version.status} at <Time iso={version.decidedAt.toISOString()} />
            </span>
          ) : null}
          <Link href="/skills" className="text-teal-800 underline-offset-2 hover:underline">
            All skills
          </Link>
        </div>
        <p className="text-sm text-slate-800" data-testid="skill-description">
          <Inert text={version.description} />
        </p>
      </div>

      <Section title="Code" id="code">
        <p className="mb-2 text-xs text-slate-500">
          Calls{" "}
          {Array.isArray(version.capabilitySet) && version.capabilitySet.length > 0 ? (
            <span className="font-mono">
              <Inert text={version.capabilitySet.filter((tool): tool is string => typeof tool === "string").join(", ")} />
            </span>
          ) : (
            "no tools"
          )}{" "}
          · from pattern <code className="break-all">{version.fingerprint.slice(0, 12)}…</code> · content digest{" "}
          <code className="break-all">{version.contentDigest}</code>
        </p>
        <SkillCode code={version.code} label={`Code of ${label}`} />
      </Section>

      <div className="grid grid-cols-1 gap-5 lg:grid-cols-2">
        <Section title="Input schema" id="input-schema">
          <Json value={version.inputSchema} label={`Input schema of ${label}`} />
        </Section>
        <Section title="Output schema" id="output-schema">
          <Json value={version.outputSchema} label={`Output schema of ${label}`} />
        </Section>
      </div>

      <Section title="Tests" id="tests">
        <p className="text-sm text-slate-700">{testsSummary(tests.length, version.skipped)}. Each replays a past run against its recorded tool calls.</p>
        {tests.length > 0 ? (
          <ul className="mt-2 space-y-1 text-xs">
            {tests.map((test) => (
              <li key={test.runId} className="flex flex-wrap gap-2">
                <Link href={`/runs/${test.runId}`} className="font-mono text-teal-800 underline-offset-2 hover:underline">
                  {test.runId}
                </Link>
                <span className="font-mono break-all text-slate-700">
                  <Inert text={JSON.stringify(test.arguments ?? {})} />
                </span>
              </li>
            ))}
          </ul>
        ) : null}
        <div data-testid="test-report" className="mt-4 rounded-md border border-slate-200 p-3 text-sm">
          {report ? (
            <>
              <p className="font-medium">
                <span className={report.failed > 0 ? "text-red-800" : "text-emerald-800"}>{reportText(report)}</span>{" "}
                <span className="font-normal text-slate-500">
                  (replayed <Time iso={report.at} />)
                </span>
              </p>
              {stale ? (
                <p role="note" className="mt-1 text-amber-800">
                  This report is of other content than this version&apos;s; it does not count for approval.
                </p>
              ) : null}
              <ul className="mt-2 space-y-1 text-xs">
                {report.cases.map((testCase) => (
                  <li key={testCase.runId} data-ok={testCase.ok ? "true" : "false"}>
                    <Badge tone={testCase.ok ? "good" : "bad"}>{testCase.ok ? "passed" : "failed"}</Badge>{" "}
                    <span className="font-mono text-slate-500">{testCase.runId.slice(0, 8)}</span> <Inert text={testCase.message} />
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p className="text-slate-600">Not replayed yet.</p>
          )}
        </div>
        {canManage && draft ? <ReplayForm versionId={version.id} action={replaySkillAction} /> : null}
      </Section>

      <Section title="Review" id="review">
        <p className="text-sm text-slate-700">
          Approvals: <span data-testid="approvals">{`${approvals} of ${APPROVALS_TO_PUBLISH}`}</span>. Two reviewers other than the drafter publish it; one
          rejection rejects it. Approving needs a replay of this content with every test passed.
        </p>
        {version.reviews.length > 0 ? (
          <ul className="mt-3 space-y-2 text-sm">
            {version.reviews.map((review) => (
              <li key={review.id} className="rounded-md border border-slate-200 px-3 py-2" data-testid="skill-review">
                <span className="font-medium">{review.reviewer.email}</span>{" "}
                <Badge tone={review.verdict === "approve" ? "good" : "bad"}>{VERDICT_WORD[review.verdict] ?? review.verdict}</Badge>{" "}
                <span className="text-xs text-slate-500">
                  <Time iso={review.createdAt.toISOString()} />
                </span>
                {review.comment ? (
                  <p className="mt-1 text-slate-700">
                    <Inert text={review.comment} />
                  </p>
                ) : null}
              </li>
            ))}
          </ul>
        ) : (
          <p className="mt-2 text-sm text-slate-600">No review yet.</p>
        )}
        {canReview && draft ? (
          <div className="mt-4">
            {mine ? (
              <p role="status" className="text-sm text-slate-700">
                You {VERDICT_WORD[mine.verdict] ?? mine.verdict} this version.
              </p>
            ) : version.draftedById === user.id ? (
              <p className="text-sm text-amber-800">You drafted this version; two other people review it.</p>
            ) : (
              <ReviewSkillForm versionId={version.id} contentDigest={version.contentDigest} action={reviewSkillAction} />
            )}
          </div>
        ) : null}
      </Section>

      <Section title="Standing approvals" id="standing">
        {standing.length === 0 ? (
          <EmptyState title="No standing approval of this version">
            {version.status === "published" ? "Calls of it by agents are reviewed as policy says." : "Only a published version can carry standing approvals."}
          </EmptyState>
        ) : (
          <StandingTable rows={standing} viewer={{ email: user.email, canManage }} confirmAction={confirmStandingAction} revokeAction={revokeStandingAction} />
        )}
        {canManage && version.status === "published" ? (
          <div className="mt-5 border-t border-slate-200 pt-4">
            <ProposeStandingForm skillVersionId={version.id} notAfter={notAfter} action={proposeStandingAction} />
          </div>
        ) : null}
      </Section>
    </div>
  );
});
