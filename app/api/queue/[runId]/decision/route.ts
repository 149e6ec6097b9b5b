/**
 * POST /api/queue/:runId/decision — the JSON door to decideRun for scripts and tests, with the
 * console session cookie. Body: {verdict, comment?, seen: {codeSha256, capabilitySet,
 * inputsDigest, policyVersionId}}. Same wrapper and service as the run page's server action;
 * refusals carry their HTTP status (403 without runs:review, 409 when the run changed or was
 * already decided). Cross-site posts are refused: the Origin, when sent, must be this host.
 */
import { NextResponse, type NextRequest } from "next/server";
import { z } from "zod";
import { prisma } from "@/lib/db";
import { decideRun } from "@/lib/review/service";
import { userAction } from "@/lib/auth/user-action";

export const dynamic = "force-dynamic";

const decide = userAction(
  "runs:review",
  z.object({ runId: z.string(), body: z.unknown() }).strict(),
  (actor, input) => decideRun(prisma(), actor, { ...(input.body && typeof input.body === "object" ? input.body : {}), runId: input.runId }),
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

export async function POST(request: NextRequest, context: { params: Promise<{ runId: string }> }) {
  if (!sameOrigin(request)) {
    return NextResponse.json({ error: { code: "forbidden", message: "Cross-site requests are refused." } }, { status: 403 });
  }
  const { runId } = await context.params;
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return NextResponse.json({ error: { code: "bad_request", message: "The body must be JSON." } }, { status: 400 });
  }
  const result = await decide({ runId, body });
  return result.ok ? NextResponse.json(result.data) : NextResponse.json({ error: result.error }, { status: result.error.status });
}
