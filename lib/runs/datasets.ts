/**
 * Datasets: named, classified files an agent may pass to a run as inputs. The content lives in
 * the database (sha256 and size recorded) and is copied into each run's sandbox; agents refer to
 * datasets by name only, so an agent can never make a run read a path of its choosing.
 */
import { sha256Hex } from "@/lib/digest";
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { DATA_CLASSES } from "@/lib/contracts/data-classes";

export const MAX_DATASET_BYTES = 16 * 1024 * 1024;

const newDatasetSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "must be a plain file name"),
    dataClass: z.enum(DATA_CLASSES),
    mediaType: z.string().min(1).max(100),
    content: z.union([z.string(), z.instanceof(Uint8Array)]),
  })
  .strict();

export async function createDataset(tx: Tx, actor: Actor, input: z.input<typeof newDatasetSchema>): Promise<{ id: string }> {
  requireScope(actor, "tools:manage");
  const parsed = newDatasetSchema.safeParse(input);
  if (!parsed.success) throw new AppError("bad_request", parsed.error.issues[0]?.message ?? "invalid dataset");
  const bytes = typeof parsed.data.content === "string" ? Buffer.from(parsed.data.content, "utf8") : Buffer.from(parsed.data.content);
  if (bytes.length > MAX_DATASET_BYTES) throw new AppError("payload_too_large", `A dataset may be at most ${MAX_DATASET_BYTES} bytes.`);
  const sha256 = sha256Hex(bytes);
  const row = await tx.dataset.create({
    data: { name: parsed.data.name, dataClass: parsed.data.dataClass, mediaType: parsed.data.mediaType, sha256, sizeBytes: bytes.length, content: bytes },
    select: { id: true },
  });
  await recordAudit(tx, {
    actor,
    action: "dataset.created",
    subject: { type: "dataset", id: row.id },
    data: { name: parsed.data.name, sha256, dataClass: parsed.data.dataClass },
  });
  return row;
}

export type DatasetInfo = { name: string; dataClass: string; sizeBytes: number; sha256: string; mediaType: string };

export async function listDatasets(db: Db): Promise<DatasetInfo[]> {
  return db.dataset.findMany({
    orderBy: { name: "asc" },
    select: { name: true, dataClass: true, sizeBytes: true, sha256: true, mediaType: true },
  });
}
