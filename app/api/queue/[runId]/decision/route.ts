/**
 * POST /api/queue/:runId/decision — the JSON door to decideRun for scripts and tests, with the
 * console session cookie. Body: {verdict, comment?, seen: {codeSha256, capabilitySet,
 * inputsDigest, policyVersionId}}. Same service as the run page's server action, behind userRoute;
 * refusals carry their HTTP status (403 without runs:review, 409 when the run changed or was
 * already decided), 413 for a body over 64 KiB. Cross-site posts are refused: the Origin, when
 * sent, must be this host, and the body must be JSON (Content-Type: application/json, an object);
 * a runId in the body must be the path's.
 */
import { NextResponse, type NextRequest } from "next/server";
import { prisma } from "@/lib/db";
import { readJsonBody } from "@/lib/json-body";
import { decideRun } from "@/lib/review/service";
import { userRoute } from "@/lib/auth/user-route";
import { foreignOrigin } from "@/lib/auth/hosts";
import { appRuntime } from "@/lib/runs/runtime";
import { AppError, toPublicError } from "@/lib/errors";

export const dynamic = "force-dynamic";

/** A decision is a verdict, a comment (at most 5,000 characters) and what the reviewer saw: far below this. */
const MAX_DECISION_BODY_BYTES = 64 * 1024;

type Context = { params: Promise<{ runId: string }> };

const decide = userRoute<Context>(
  "runs:review",
  async (actor, request, context) => {
    const { runId } = await context.params;
    const body = await readJsonBody(request, MAX_DECISION_BODY_BYTES);
    // JSON only: a form or text/plain body is what a page on another site can send without asking.
    if (!/^application\/json\s*(;|$)/i.test(request.headers.get("content-type") ?? "")) {
      throw new AppError("bad_request", "Send the decision as JSON, with Content-Type: application/json.");
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw new AppError("bad_request", "The body must be a JSON object.");
    // The run is the one the path names; a body naming another is a mistake, not a choice between them.
    if ("runId" in body && body.runId !== runId) throw new AppError("bad_request", "runId: the body names another run than the path.");
    return decideRun({ db: prisma(), startExecution: (await appRuntime(prisma())).startExecution }, actor, { ...body, runId });
  },
  { door: "api:/api/queue/decision" },
);

export async function POST(request: NextRequest, context: Context) {
  const foreign = foreignOrigin(request);
  if (foreign) {
    const error = toPublicError(new AppError("forbidden", `Cross-site requests are refused: ${foreign}.`));
    return NextResponse.json({ error }, { status: error.status, headers: { "cache-control": "no-store" } });
  }
  return decide(request, context);
}
