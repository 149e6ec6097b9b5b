/**
 * A run's artifacts against their seal, for verification (./verify.ts). The terminal event
 * digests `execution`, whose `artifacts` lists each stored file as {name, sha256, sizeBytes,
 * mediaType} (lib/runs/artifacts.ts); once that digest matches, the list is evidence, and the
 * stored rows and bytes must agree with it.
 *
 * Guarantees: `loadArtifactEvidence` reads the "RunArtifact" rows of many runs in one query, with
 * whether each blob's bytes still hash to the sha256 and size sealed (computed by PostgreSQL; no
 * bytes leave the database), or were deleted (NULL with a purgedAt). `artifactsProblem` names the
 * first file that is sealed but not stored, stored but not sealed, stored with another sha256, size
 * or type, whose bytes changed, or whose bytes are gone while no `run.purged` event of the run
 * names its artifacts — or null. Entries sealed without a mediaType are from before files were
 * stored, and have no rows.
 */
import type { Db } from "@/lib/db";

export type ArtifactEvidence = { name: string; sha256: string; sizeBytes: number; mediaType: string; intact: boolean; deleted: boolean };

export async function loadArtifactEvidence(db: Db, runIds: readonly string[]): Promise<Map<string, ArtifactEvidence[]>> {
  const byRun = new Map<string, ArtifactEvidence[]>();
  if (runIds.length === 0) return byRun;
  const rows = await db.$queryRaw<(ArtifactEvidence & { runId: string })[]>`
    SELECT a."runId"::text AS "runId", a."name", a."sha256", a."sizeBytes", a."mediaType",
           coalesce(encode(sha256(b."bytes"), 'hex') = a."sha256" AND octet_length(b."bytes") = a."sizeBytes", false) AS intact,
           (b."bytes" IS NULL AND b."purgedAt" IS NOT NULL) AS deleted
    FROM "RunArtifact" a LEFT JOIN "ArtifactBlob" b ON b."sha256" = a."sha256"
    WHERE a."runId" = ANY(${[...runIds]}::uuid[])`;
  for (const { runId, ...row } of rows) byRun.set(runId, [...(byRun.get(runId) ?? []), row]);
  return byRun;
}

type Sealed = { name: string; sha256: string; sizeBytes: number; mediaType: string };

function sealedArtifacts(execution: unknown): Sealed[] {
  const list = (execution as { artifacts?: unknown } | null)?.artifacts;
  if (!Array.isArray(list)) return [];
  return list.filter((entry): entry is Sealed => typeof (entry as { mediaType?: unknown } | null)?.mediaType === "string");
}

/** `purged`: a `run.purged` event after the seal names the run's artifacts. */
export function artifactsProblem(execution: unknown, stored: readonly ArtifactEvidence[], purged: boolean): string | null {
  const sealed = new Map(sealedArtifacts(execution).map((entry) => [entry.name, entry]));
  const rows = new Map(stored.map((row) => [row.name, row]));
  for (const [name, entry] of sealed) {
    const row = rows.get(name);
    if (!row) return `its artifact ${JSON.stringify(name)} is sealed but not stored`;
    if (row.sha256 !== entry.sha256 || row.sizeBytes !== entry.sizeBytes || row.mediaType !== entry.mediaType) {
      return `its artifact ${JSON.stringify(name)} is stored with another sha256, size or type than sealed`;
    }
    if (row.deleted && !purged) return `the bytes of its artifact ${JSON.stringify(name)} are gone, and no run.purged event of the run names its artifacts`;
    if (!row.intact && !row.deleted) return `the bytes of its artifact ${JSON.stringify(name)} no longer match their sealed sha256`;
  }
  for (const name of rows.keys()) if (!sealed.has(name)) return `its artifact ${JSON.stringify(name)} is stored but was never sealed`;
  return null;
}
