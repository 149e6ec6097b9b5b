/** GET /api/queue/count — how many runs wait for the signed-in reviewer (the navigation badge). */
import { NextResponse } from "next/server";
import { recordForbidden } from "@/lib/audit/access";
import { currentUser } from "@/lib/auth/session";
import { requireScope } from "@/lib/auth/scopes";
import { prisma } from "@/lib/db";
import { toPublicError } from "@/lib/errors";
import { waitingForYouCount } from "@/lib/review/presenter";

export const dynamic = "force-dynamic";

export async function GET() {
  let user: Awaited<ReturnType<typeof currentUser>> = null;
  try {
    user = await currentUser();
    requireScope(user, "runs:review");
    return NextResponse.json({ waitingForYou: await waitingForYouCount(prisma(), user!) }, { headers: { "cache-control": "no-store" } });
  } catch (error) {
    await recordForbidden(prisma(), user, error, "api:/api/queue/count");
    const failure = toPublicError(error);
    if (failure.code === "internal") console.error("GET /api/queue/count failed", error);
    return NextResponse.json({ error: failure }, { status: failure.status });
  }
}
