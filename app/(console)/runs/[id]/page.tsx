import type { Metadata } from "next";
import { runPageTitle } from "@/components/run/page-title";
import { headers } from "next/headers";
import { notFound } from "next/navigation";
import { Artifacts } from "@/components/run/artifacts";
import { AutoRefresh } from "@/components/run/auto-refresh";
import { CancelButton } from "@/components/run/cancel-button";
import { CodeView, DiffView } from "@/components/run/code-view";
import { DecisionForm } from "@/components/run/decision-form";
import { PlanTable } from "@/components/run/plan-table";
import { ReleaseForm } from "@/components/run/release-form";
import { ToolUsesTable } from "@/components/run/tool-uses";
import {
  AgentOutcomes,
  Capabilities,
  Inputs,
  Limits,
  Outcome,
  PolicyDecision,
  Provenance,
  Reviews,
  SameCode,
  Section,
  Timeline,
  ToolCalls,
} from "@/components/run/run-sections";
import { Badge } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";
import { isPageRefresh, recordRunViewed } from "@/lib/audit/access";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { runDetail } from "@/lib/review/run-presenter";
import { cancelAction, decideAction, releaseAction, withholdAction } from "./actions";
import { Inert } from "@/components/ui/inert";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: runPageTitle("Run", (await params).id) };
}

export const dynamic = "force-dynamic";

export default userPage("runs:read", async function RunPage(user, { params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const run = await runDetail(prisma(), id, user);
  if (!run) notFound();
  // One run.viewed per view, written before the page is sent; AutoRefresh's re-renders of the
  // page already on screen (router.refresh) are covered by that event (lib/audit/access.ts).
  await recordRunViewed(prisma(), user, run.id, {
    refresh: isPageRefresh(await headers(), `/runs/${id}`),
    status: run.status,
    personalData: run.personalData,
  });
  return (
    <div className="space-y-5">
      {/* Votes of other reviewers and execution progress appear without a reload. */}
      <AutoRefresh status={run.status} />
      <header>
        <p className="font-mono text-xs text-slate-500">run {run.id}</p>
        <h1 className="text-xl font-semibold tracking-tight md:text-2xl">
          <Inert text={run.purpose} />
        </h1>
        <div className="mt-2 flex flex-wrap items-center gap-2 text-sm text-slate-700">
          <StatusBadge status={run.status} errorCode={run.outcome?.error?.code ?? null} data-testid="run-status" />
          <Badge tone={run.risk.level === "medium" ? "warn" : run.risk.level === "low" ? "neutral" : "bad"} data-testid="risk" data-risk={run.risk.level}>
            {run.risk.label}
          </Badge>
          <Badge>{run.facts.effect.replace("_", " ")}</Badge>
          {run.facts.openWorld ? <Badge tone="warn">open world</Badge> : null}
          {run.facts.dataClasses.map((c) => (
            <Badge key={c}>{c}</Badge>
          ))}
          <span>
            agent{" "}
            <strong>
              <Inert text={run.agent.name} />
            </strong>{" "}
            (owner {run.agent.owner})
          </span>
          <span>
            submitted <Time iso={run.createdAt} />
          </span>
          {run.status === "pending_review" && run.reviewExpiresAt ? (
            <span>
              review expires <Time iso={run.reviewExpiresAt} />
            </span>
          ) : null}
        </div>
      </header>

      <Section title="Review" id="review">
        <Reviews run={run} />
        <div className="mt-4">
          {run.viewer.reviewer ? (
            <DecisionForm
              runId={run.id}
              canDecide={run.viewer.canDecide}
              cannotDecideBecause={run.status === "pending_review" ? run.viewer.cannotDecideBecause : null}
              binding={run.binding}
              action={decideAction}
            />
          ) : run.viewer.cannotDecideBecause && run.status === "pending_review" ? (
            <p className="rounded-md bg-slate-50 px-3 py-2 text-sm text-slate-700" data-testid="cannot-decide">
              {run.viewer.cannotDecideBecause}
            </p>
          ) : null}
        </div>
        {run.viewer.reviewer ? (
          <div className="mt-4 empty:hidden">
            <CancelButton runId={run.id} canCancel={run.viewer.canCancel} action={cancelAction} />
          </div>
        ) : null}
      </Section>

      {run.release ? (
        <Section
          title={run.release.status === "pending_release" ? "Result held for release" : run.release.releasedAt ? "Released result" : "Withheld result"}
          id="release"
        >
          <ReleaseForm runId={run.id} release={run.release} action={releaseAction} withhold={withholdAction} />
        </Section>
      ) : null}

      {run.plan ? (
        <Section title={planTitle(run.status, run.reviews.filter((r) => r.verdict === "approve").length >= Math.max(1, run.approvalsRequired))} id="plan">
          <PlanTable plan={run.plan} />
        </Section>
      ) : run.status === "previewing" ? (
        <Section title="Plan" id="plan">
          <p className="text-sm text-slate-600">The plan preview is running: the script runs with every write intercepted, to show what it would write.</p>
        </Section>
      ) : null}

      <Section title="Policy decision" id="policy">
        <PolicyDecision run={run} />
      </Section>

      <Section title="Code" id="code">
        <p className="mb-2 text-xs text-slate-500">
          {run.language} · sha256 <code>{run.binding.codeSha256}</code> · {run.findings.length} finding{run.findings.length === 1 ? "" : "s"}
        </p>
        {run.code.hiddenCharacters ? (
          <p role="note" className="mb-2 rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900">
            This script contains invisible or direction-changing characters; they are shown as highlighted U+… markers.
          </p>
        ) : null}
        <CodeView lines={run.code.lines} findingsByLine={run.code.findingsByLine} label="Script" />
      </Section>

      <Section title="Tool calls and their arguments" id="tool-uses">
        <ToolUsesTable toolUses={run.toolUses} />
      </Section>

      <Section title="Capability set" id="capabilities">
        <Capabilities run={run} />
      </Section>

      <Section title="Limits" id="limits">
        <Limits run={run} />
      </Section>

      <Section title="Inputs" id="inputs">
        <Inputs run={run} />
      </Section>

      <div className="grid grid-cols-1 gap-5 lg:grid-cols-2">
        <Section title="Provenance" id="provenance">
          <Provenance run={run} />
        </Section>
        <Section title="Earlier runs with the same code" id="same-code">
          <SameCode run={run} />
        </Section>
      </div>

      <Section title="Changes since the previous attempt" id="diff">
        {run.previousAttempt ? (
          <>
            <p className="mb-2 text-sm text-slate-600">
              Compared with{" "}
              <a href={`/runs/${run.previousAttempt.id}`} className="text-teal-800 underline">
                the attempt of <Time iso={run.previousAttempt.createdAt} />
              </a>{" "}
              in the same conversation, which is now <StatusBadge status={run.previousAttempt.status} />
            </p>
            <DiffView diff={run.previousAttempt.diff} />
          </>
        ) : (
          <p className="text-sm text-slate-600">
            This is the agent&apos;s first attempt in this conversation{run.provenance.conversationId ? "" : " (no conversation id was given)"}.
          </p>
        )}
      </Section>

      {run.outcome ? (
        <Section title="Outcome" id="outcome">
          {run.personalData > 0 ? (
            <p role="note" className="mb-3 rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900" data-testid="personal-data-note">
              {run.personalData} personal-data value{run.personalData === 1 ? "" : "s"} below reached the agent only as tokens (such as &lt;EMAIL_1&gt;). You
              see them in the clear, and your view of this run is recorded in the audit log.
            </p>
          ) : null}
          <Outcome run={run} />
        </Section>
      ) : null}

      {run.outcome || run.agentOutcomes.length > 0 ? (
        <Section title="What the agent did with the result" id="agent-outcomes">
          <AgentOutcomes run={run} />
        </Section>
      ) : null}

      {run.outcome && run.outcome.artifacts.length > 0 ? (
        <Section title="Artifacts" id="artifacts">
          <Artifacts artifacts={run.outcome.artifacts} />
        </Section>
      ) : null}

      {run.outcome || run.toolCalls.length > 0 ? (
        <Section title="Tool calls" id="tool-calls">
          <ToolCalls run={run} />
        </Section>
      ) : null}

      <Section title="Timeline" id="timeline">
        <Timeline run={run} />
      </Section>
    </div>
  );
});

/** What the plan is, for where the run stands: to approve, approved (the quorum was met), or never approved. */
function planTitle(status: string, approved: boolean): string {
  if (status === "pending_review") return "Plan: the writes this approval allows";
  return approved ? "Plan: the writes reviewers approved" : "Plan: the writes the script would have made";
}
