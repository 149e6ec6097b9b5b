/**
 * GET /api/audit/runs/<id>/evidence — the run's evidence file (lib/audit/evidence.ts) as a JSON
 * download, for a signed-in person with audit:export. exportEvidenceAudited signs a checkpoint
 * covering the run first and records `audit.evidence_exported` (the person as actor) before the
 * file is sent. `airlock audit verify-evidence FILE` checks it offline.
 */
import { checkpointConfigFromEnv } from "@/lib/audit/checkpoints";
import { exportEvidenceAudited } from "@/lib/audit/service";
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export const GET = userRoute("audit:export", async (user, _request, { params }: { params: Promise<{ id: string }> }) => {
  const { id } = await params;
  const evidence = await exportEvidenceAudited(prisma(), user, checkpointConfigFromEnv(), id);
  return new Response(JSON.stringify(evidence, null, 2) + "\n", {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-disposition": `attachment; filename="run-${evidence.run.id}.evidence.json"`,
      "cache-control": "no-store",
    },
  });
});
