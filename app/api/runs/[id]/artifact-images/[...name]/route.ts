/**
 * GET /api/runs/<id>/artifact-images/<name> — a PNG or SVG artifact for the run page's `<img>`
 * preview (components/run/artifacts.tsx), to a signed-in person with runs:read. The image type is
 * sent only after the bytes are checked again (PNG signature, SVG root element); anything else is
 * refused (400). A browser request for any destination but an image (an SVG opened as a document,
 * a frame) is refused before the bytes are read. The response carries the same hostile-content
 * headers as a download (CSP sandbox; default-src 'none', nosniff, attachment), so an SVG can only
 * ever be drawn by `<img>`, where it runs no script. Each fetch records `run.artifact_downloaded`
 * (via "image") before the bytes are sent.
 */
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { readArtifact } from "@/lib/runs/artifacts";
import { hostileContentHeaders } from "@/lib/runs/artifacts-media";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ id: string; name: string[] }> };

export const GET = userRoute("runs:read", async (user, request, { params }: Context) => {
  const destination = request.headers.get("sec-fetch-dest");
  if (destination !== null && destination !== "image")
    throw new AppError("bad_request", "This address serves images for <img> only; download the file instead.");
  const { id, name } = await params;
  const artifact = await readArtifact(prisma(), user, { runId: id, name: name.join("/"), via: "image" });
  return new Response(new Uint8Array(artifact.bytes), { headers: hostileContentHeaders(artifact, artifact.contentType) });
});
