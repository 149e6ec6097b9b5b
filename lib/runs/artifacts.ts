/**
 * A run's artifacts — the files its script wrote under ./out/ — kept by content, sealed with the
 * run, and handed out audited. Media types and HTTP headers: ./artifacts-media.ts; previews:
 * ./artifacts-preview.ts; tables and triggers: migration 20261202120000_artifacts.
 *
 * Guarantees:
 * - `artifactRecords` turns the envelope's artifacts into what is stored: the bytes decoded and
 *   hashed again here (a sha256 or size that differs from the envelope's is refused), the name
 *   checked again against the sandbox's rule, the media type sniffed from the bytes. The executor
 *   puts `{name, sizeBytes, sha256, mediaType}` of each into `execution.artifacts`, which the
 *   run's terminal event digests: the list is sealed in the chain and each file's bytes are proven
 *   by their sha256;
 * - `storeArtifacts` writes them in the caller's transaction (the terminal write's): one
 *   "ArtifactBlob" per sha256 (content-addressed: the same bytes are stored once; bytes purged by
 *   retention come back when a later run writes them again) and one "RunArtifact" per file, in a
 *   few statements whatever the number of files. The database re-checks every blob's sha256 and
 *   size on insert, accepts a "RunArtifact" only as an entry of its run's sealed list, and both
 *   tables refuse changes besides retention's purge;
 * - `readArtifact` hands one artifact's bytes to a person only after `run.artifact_downloaded`
 *   (actor the person, subject the run, data {name, sha256, sizeBytes, via}) is committed: no
 *   event, no bytes. For the image route the bytes must be a PNG or an SVG when they are served
 *   (checked again, not taken from the stored type).
 *
 * Refuses: an unknown run, a name outside the sandbox's rule or not among the run's artifacts
 * (not_found, the same for both); bytes purged by retention (gone, saying when); an image request
 * for bytes that are not a PNG or an SVG (bad_request).
 */
import { createHash } from "node:crypto";
import { recordAudit } from "@/lib/audit/record";
import type { Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { Prisma } from "@/lib/generated/prisma/client";
import type { Artifact } from "@/lib/sandbox/types";
import { imageContentType, isArtifactName, sniffMediaType, type ArtifactMediaType, type ImageMediaType } from "./artifacts-media";
import { needsBytesForPreview } from "./artifacts-preview";

export type ArtifactRecord = { name: string; sizeBytes: number; sha256: string; mediaType: ArtifactMediaType; bytes: Buffer };

export function artifactRecords(artifacts: readonly Artifact[]): ArtifactRecord[] {
  return artifacts.map((artifact) => {
    if (!isArtifactName(artifact.name))
      throw new Error(`refusing to store an artifact named outside the sandbox's rule: ${JSON.stringify(artifact.name.slice(0, 100))}`);
    const bytes = Buffer.from(artifact.base64, "base64");
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    if (sha256 !== artifact.sha256 || bytes.length !== artifact.sizeBytes)
      throw new Error(`artifact ${artifact.name}: its bytes do not match the envelope's sha256 and size`);
    return { name: artifact.name, sizeBytes: bytes.length, sha256, mediaType: sniffMediaType(artifact.name, bytes), bytes };
  });
}

/** Blobs per INSERT (three parameters each, far below PostgreSQL's 65,535). */
const BLOBS_PER_STATEMENT = 500;

export async function storeArtifacts(tx: Tx, runId: string, records: readonly ArtifactRecord[]): Promise<void> {
  if (records.length === 0) return;
  const unique = [...new Map(records.map((record) => [record.sha256, record])).values()];
  for (let i = 0; i < unique.length; i += BLOBS_PER_STATEMENT) {
    const values = unique.slice(i, i + BLOBS_PER_STATEMENT).map((record) => Prisma.sql`(${record.sha256}, ${record.sizeBytes}, ${record.bytes})`);
    await tx.$executeRaw`
      INSERT INTO "ArtifactBlob" ("sha256", "sizeBytes", "bytes") VALUES ${Prisma.join(values)}
      ON CONFLICT ("sha256") DO UPDATE SET "bytes" = EXCLUDED."bytes", "purgedAt" = NULL WHERE "ArtifactBlob"."bytes" IS NULL`;
  }
  await tx.runArtifact.createMany({
    data: records.map(({ name, sha256, sizeBytes, mediaType }) => ({ runId, name, sha256, sizeBytes, mediaType })),
  });
}

export type LoadedArtifact = {
  name: string;
  sizeBytes: number;
  sha256: string;
  mediaType: string;
  purgedAt: Date | null;
  /** Only for a CSV or JSON file small enough to preview, and not purged. */
  bytes: Buffer | null;
};

/**
 * When retention purged this run's artifacts: its own purge counts, whatever the shared blob's
 * state (a later run writing the same bytes restores the blob, not this run's right to them).
 */
async function runArtifactsPurgedAt(db: Db | Tx, runId: string): Promise<Date | null> {
  const run = await db.run.findUnique({ where: { id: runId }, select: { purged: true } });
  const at = (run?.purged as Record<string, unknown> | null)?.artifacts;
  return typeof at === "string" ? new Date(at) : null;
}

/** A run's stored artifacts for its console page (bytes only where a preview needs them). */
export async function loadRunArtifacts(db: Db, runId: string): Promise<LoadedArtifact[]> {
  const purgedAt = await runArtifactsPurgedAt(db, runId);
  const rows = (await db.runArtifact.findMany({ where: { runId }, orderBy: { name: "asc" }, include: { blob: { select: { purgedAt: true } } } })).map(
    (row) => ({ ...row, purgedAt: purgedAt ?? row.blob.purgedAt }),
  );
  const wanted = rows.filter((row) => !row.purgedAt && needsBytesForPreview(row.mediaType, row.sizeBytes)).map((row) => row.sha256);
  const blobs = wanted.length ? await db.artifactBlob.findMany({ where: { sha256: { in: wanted } }, select: { sha256: true, bytes: true } }) : [];
  const bytesOf = new Map(blobs.map((blob) => [blob.sha256, blob.bytes ? Buffer.from(blob.bytes) : null]));
  return rows.map((row) => ({
    name: row.name,
    sizeBytes: row.sizeBytes,
    sha256: row.sha256,
    mediaType: row.mediaType,
    purgedAt: row.purgedAt,
    bytes: row.purgedAt ? null : (bytesOf.get(row.sha256) ?? null),
  }));
}

export type ServedArtifact = {
  name: string;
  sizeBytes: number;
  sha256: string;
  bytes: Buffer;
  /** application/octet-stream for a download; the type checked now for the image route. */
  contentType: "application/octet-stream" | ImageMediaType;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function readArtifact(db: Db, actor: Actor, request: { runId: string; name: string; via: "download" | "image" }): Promise<ServedArtifact> {
  const missing = () => new AppError("not_found", "No such artifact in this run.");
  if (!UUID.test(request.runId) || !isArtifactName(request.name)) throw missing();
  return db.$transaction(async (tx) => {
    const row = await tx.runArtifact.findUnique({ where: { runId_name: { runId: request.runId, name: request.name } }, include: { blob: true } });
    if (!row) throw missing();
    const purgedAt = (await runArtifactsPurgedAt(tx, row.runId)) ?? row.blob.purgedAt;
    if (purgedAt || row.blob.bytes === null) {
      const on = purgedAt?.toISOString().slice(0, 10) ?? "an unknown date";
      throw new AppError("gone", `The bytes of ${row.name} were purged on ${on} by retention; its name, size and sha256 stay in the audit record.`, {
        details: { purgedAt: purgedAt?.toISOString() ?? null, sha256: row.sha256 },
      });
    }
    const bytes = Buffer.from(row.blob.bytes);
    let contentType: ServedArtifact["contentType"] = "application/octet-stream";
    if (request.via === "image") {
      const image = imageContentType(row.name, bytes);
      if (!image) throw new AppError("bad_request", `${row.name} is not a PNG or SVG image (by its content); download it instead.`);
      contentType = image;
    }
    await recordAudit(tx, {
      actor,
      action: "run.artifact_downloaded",
      subject: { type: "run", id: row.runId },
      data: { name: row.name, sha256: row.sha256, sizeBytes: row.sizeBytes, via: request.via },
    });
    return { name: row.name, sizeBytes: row.sizeBytes, sha256: row.sha256, bytes, contentType };
  });
}
