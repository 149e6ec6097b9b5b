/** A run's whole audited story: events, reviews and tool calls. Viewing it is audited ("audit.viewed"). */
import { runPageTitle } from "@/components/run/page-title";
import type { Metadata } from "next";
import Link from "next/link";
import { EvidenceDownload } from "@/components/audit/evidence-download";
import { LegalHoldPanel } from "@/components/audit/legal-hold";
import { RunTimeline } from "@/components/audit/run-timeline";
import { PageHeader } from "@/components/ui/primitives";
import { activeHolds } from "@/lib/audit/holds";
import { viewRunTimelineAudited } from "@/lib/audit/service";
import { userPage } from "@/lib/auth/user-route";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { placeHoldAction, releaseHoldAction } from "./actions";

export async function generateMetadata({ params }: { params: Promise<{ id: string }> }): Promise<Metadata> {
  return { title: runPageTitle("Run timeline", (await params).id) };
}

export const dynamic = "force-dynamic";

export default userPage("audit:read", async function RunTimelinePage(user, { params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const timeline = await viewRunTimelineAudited(prisma(), user, id);
  const holds = (await activeHolds(prisma(), id)).map((hold) => ({ ...hold, placedAt: hold.placedAt.toISOString() }));
  return (
    <>
      <Link href="/audit" className="text-sm text-teal-700 underline">
        ← Audit search
      </Link>
      <PageHeader title={`Run ${id.slice(0, 8)}`} description="Every audit event, review and tool call of this run, in order." />
      {hasScope(user, "audit:export") ? <EvidenceDownload runId={id} /> : null}
      <LegalHoldPanel runId={id} holds={holds} place={placeHoldAction} release={releaseHoldAction} />
      <RunTimeline timeline={timeline} />
    </>
  );
});
