/** GET /api/queue?agent=&effect= — the review queue for the signed-in reviewer (polled by the queue page). */
import { NextResponse, type NextRequest } from "next/server";
import { recordForbidden } from "@/lib/audit/access";
import { currentUser } from "@/lib/auth/session";
import { requireScope } from "@/lib/auth/scopes";
import { prisma } from "@/lib/db";
import { toPublicError } from "@/lib/errors";
import { parseQueueFilters, queueView } from "@/lib/review/presenter";

export const dynamic = "force-dynamic";

export async function GET(request: NextRequest) {
  let user: Awaited<ReturnType<typeof currentUser>> = null;
  try {
    user = await currentUser();
    requireScope(user, "runs:review");
    const view = await queueView(prisma(), user!, parseQueueFilters(request.nextUrl.searchParams));
    return NextResponse.json(view, { headers: { "cache-control": "no-store" } });
  } catch (error) {
    await recordForbidden(prisma(), user, error, "api:/api/queue");
    const failure = toPublicError(error);
    if (failure.code === "internal") console.error("GET /api/queue failed", error);
    return NextResponse.json({ error: failure }, { status: failure.status });
  }
}
