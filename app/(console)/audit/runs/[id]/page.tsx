/** A run's whole audited story: events, reviews and tool calls. Viewing it is audited ("audit.viewed"). */
import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { RunTimeline } from "@/components/audit/run-timeline";
import { PageHeader } from "@/components/ui/primitives";
import { viewRunTimelineAudited } from "@/lib/audit/service";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { isAppError } from "@/lib/errors";

export const metadata: Metadata = { title: "Run timeline" };
export const dynamic = "force-dynamic";

export default async function RunTimelinePage({ params }: { params: Promise<{ id: string }> }) {
  const user = await requireUserPage("audit:read");
  const { id } = await params;
  let timeline;
  try {
    timeline = await viewRunTimelineAudited(prisma(), user, id);
  } catch (error) {
    if (isAppError(error) && error.code === "not_found") notFound();
    throw error;
  }
  return (
    <>
      <Link href="/audit" className="text-sm text-teal-700 underline">
        ← Audit search
      </Link>
      <PageHeader title={`Run ${id.slice(0, 8)}`} description="Every audit event, review and tool call of this run, in order." />
      <RunTimeline timeline={timeline} />
    </>
  );
}
