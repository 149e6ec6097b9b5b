/**
 * GET /api/runs/<id>/artifacts/<name> — one file the run's script wrote under ./out/, as a
 * download, to a signed-in person who may read runs (runs:read, as the run page). The bytes were
 * written by a hostile script: they are sent as `application/octet-stream`, `Content-Disposition:
 * attachment` (the name encoded), `Content-Security-Policy: sandbox; default-src 'none'` and
 * `nosniff` (lib/runs/artifacts-media.ts), and only after `run.artifact_downloaded` is recorded
 * (lib/runs/artifacts.ts). Unknown run or name: 404; purged by retention: 410, saying when.
 */
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { readArtifact } from "@/lib/runs/artifacts";
import { hostileContentHeaders } from "@/lib/runs/artifacts-media";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ id: string; name: string[] }> };

export const GET = userRoute("runs:read", async (user, _request, { params }: Context) => {
  const { id, name } = await params;
  const artifact = await readArtifact(prisma(), user, { runId: id, name: name.join("/"), via: "download" });
  return new Response(new Uint8Array(artifact.bytes), { headers: hostileContentHeaders(artifact, artifact.contentType) });
});
