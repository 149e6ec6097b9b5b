/**
 * The datasets a run reads, as files the sandbox's staging copies from (lib/sandbox/stage.ts),
 * kept on this host by content: `<AIRLOCK_DATA_DIR>/staged-datasets/<sha256>`.
 *
 * Why: reading a dataset's bytes out of PostgreSQL was most of what a data run spent outside the
 * sandbox (about 95 ms of a 4.3 MB CSV, bench:data). A dataset's content is fixed by the sha256
 * intake approved, so the file for that digest never changes and serves every later run.
 *
 * Guarantees:
 * - a path returned holds exactly the bytes of the approved sha256: a file is hashed on every use
 *   (much cheaper than the read it saves), and one that does not match is deleted and fetched
 *   again; bytes fetched from the database are hashed before they are written, and a dataset
 *   whose stored bytes no longer match its approved digest fails the run (it changed since);
 * - a file appears whole or not at all (written beside it, then renamed), readable by this user
 *   only (0400, in a 0700 directory);
 * - files of digests no dataset has any more are removed when a new one is written, so the
 *   directory holds at most the datasets there are (and, for an hour, what a crash left half
 *   written).
 * Refuses: a name that is not a sha256 in hex (never used as a path).
 */
import { randomUUID } from "node:crypto";
import { readFile, readdir, realpath, rename, rm, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { makeDirectory } from "@/lib/make-directory";
import type { Db } from "@/lib/db";
import { sha256Hex } from "@/lib/digest";
import { env } from "@/lib/env";

const SHA256 = /^[0-9a-f]{64}$/;
/** A file being written is named `.<sha256>.<uuid>` until its rename; one this old was left by a crash. */
const PARTIAL = /^\.[0-9a-f]{64}\.[0-9a-f-]{36}$/;
const PARTIAL_MAX_AGE_MS = 3_600_000;

export type StagedDataset = { name: string; path: string };

function cacheDir(): string {
  return join(resolve(/*turbopackIgnore: true*/ env().AIRLOCK_DATA_DIR), "staged-datasets");
}

/** The file of each input, verified against the sha256 approved at intake. */
export async function stagedDatasets(db: Db, inputs: readonly { name: string; datasetId: string; sha256: string }[]): Promise<StagedDataset[]> {
  const staged: StagedDataset[] = [];
  for (const input of inputs) staged.push({ name: input.name, path: await datasetFile(db, input) });
  return staged;
}

async function datasetFile(db: Db, input: { name: string; datasetId: string; sha256: string }): Promise<string> {
  if (!SHA256.test(input.sha256)) throw new Error(`dataset ${input.name}: its approved digest is not a sha256`);
  // Its real path: the sandbox's staging refuses a path through a symlink.
  await makeDirectory(cacheDir(), 0o700);
  const dir = await realpath(cacheDir());
  const path = join(dir, input.sha256);
  const kept = await readFile(path).catch(() => null);
  if (kept && sha256Hex(kept) === input.sha256) return path;
  if (kept) await rm(path, { force: true });

  const dataset = await db.dataset.findUniqueOrThrow({ where: { id: input.datasetId }, select: { content: true } });
  if (sha256Hex(dataset.content) !== input.sha256) throw new Error(`dataset ${input.name} changed since the run was approved`);
  // turbopackIgnore: a runtime path under AIRLOCK_DATA_DIR; without it Next traces the whole project.
  const partial = join(/*turbopackIgnore: true*/ dir, `.${input.sha256}.${randomUUID()}`);
  await writeFile(partial, dataset.content, { mode: 0o400, flag: "wx" });
  await rename(partial, path);
  await removeUnused(db, dir);
  return path;
}

/** Removes the files of digests no dataset has (a replaced or deleted dataset). */
async function removeUnused(db: Db, dir: string): Promise<void> {
  const current = new Set((await db.dataset.findMany({ select: { sha256: true } })).map((d) => d.sha256));
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if (SHA256.test(name) && !current.has(name)) await rm(path, { force: true });
    if (PARTIAL.test(name)) {
      const written = await stat(path).catch(() => null);
      if (written && Date.now() - written.mtimeMs > PARTIAL_MAX_AGE_MS) await rm(path, { force: true });
    }
  }
}
