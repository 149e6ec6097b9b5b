import type { Metadata } from "next";
import { QueueTable } from "@/components/queue/queue-table";
import { PageHeader } from "@/components/ui/primitives";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { parseQueueFilters, queueView } from "@/lib/review/queue-presenter";

export const metadata: Metadata = { title: "Queue" };
export const dynamic = "force-dynamic";

export default userPage(
  "runs:review",
  async function QueuePage(user, { searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
    const view = await queueView(prisma(), user, parseQueueFilters(await searchParams));
    return (
      <>
        <PageHeader title="Review queue" description="Runs that policy escalated to a human: riskiest first, then oldest. Updates live." />
        <QueueTable initial={view} />
      </>
    );
  },
);
