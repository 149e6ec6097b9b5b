/**
 * POST /api/queue/:runId/decision — the JSON door to decideRun for scripts and tests, with the
 * console session cookie. Body: {verdict, comment?, seen: {codeSha256, capabilitySet,
 * inputsDigest, policyVersionId}}. Same service as the run page's server action, behind userRoute;
 * refusals carry their HTTP status (403 without runs:review, 409 when the run changed or was
 * already decided), 413 for a body over 64 KiB. Cross-site posts are refused: the Origin, when
 * sent, must be this host.
 */
import { NextResponse, type NextRequest } from "next/server";
import { prisma } from "@/lib/db";
import { readJsonBody } from "@/lib/json-body";
import { decideRun } from "@/lib/review/service";
import { userRoute } from "@/lib/auth/user-route";
import { appRuntime } from "@/lib/runs/runtime";

export const dynamic = "force-dynamic";

/** A decision is a verdict, a comment (at most 5,000 characters) and what the reviewer saw: far below this. */
const MAX_DECISION_BODY_BYTES = 64 * 1024;

type Context = { params: Promise<{ runId: string }> };

const decide = userRoute<Context>(
  "runs:review",
  async (actor, request, context) => {
    const { runId } = await context.params;
    const body = await readJsonBody(request, MAX_DECISION_BODY_BYTES);
    return decideRun({ db: prisma(), startExecution: (await appRuntime(prisma())).startExecution }, actor, {
      ...(body && typeof body === "object" ? body : {}),
      runId,
    });
  },
  { door: "api:/api/queue/decision" },
);

function sameOrigin(request: NextRequest): boolean {
  const origin = request.headers.get("origin");
  if (!origin) return true;
  try {
    return new URL(origin).host === request.headers.get("host");
  } catch {
    return false;
  }
}

export async function POST(request: NextRequest, context: Context) {
  if (!sameOrigin(request)) {
    return NextResponse.json({ error: { code: "forbidden", message: "Cross-site requests are refused." } }, { status: 403 });
  }
  return decide(request, context);
}
