/**
 * Staged datasets (./staged-datasets.ts) on a real PostgreSQL: a file per approved digest, whose
 * bytes are checked on every use, so neither a changed file nor a changed row reaches a run.
 */
import { chmod, mkdtemp, readFile, realpath, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { createDataset } from "./datasets";
import { stagedDatasets } from "./staged-datasets";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let dataDir: string;

async function dataset(name: string, content: string) {
  const { id } = await db.prisma.$transaction((tx) => createDataset(tx, system, { name, dataClass: "internal", mediaType: "text/csv", content }));
  const { sha256 } = await db.prisma.dataset.findUniqueOrThrow({ where: { id } });
  return { name, datasetId: id, sha256 };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "airlock-staged-"));
  setEnvForChildren({ AIRLOCK_DATA_DIR: dataDir });
  db = await createTestDatabase();
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe("staged datasets", () => {
  it("keeps one owner-only file per approved digest, and serves it to later runs", async () => {
    const input = await dataset("a.csv", "x,y\n1,2\n");
    const [first] = await stagedDatasets(db.prisma, [input]);
    expect(first!.path).toBe(join(dataDir, "staged-datasets", input.sha256));
    expect(await readFile(first!.path, "utf8")).toBe("x,y\n1,2\n");
    expect((await stat(first!.path)).mode & 0o777).toBe(0o400);
    expect((await stat(join(dataDir, "staged-datasets"))).mode & 0o777).toBe(0o700);
    const [again] = await stagedDatasets(db.prisma, [input]);
    expect(again!.path).toBe(first!.path);
  });

  it("replaces a file whose bytes were changed on disk with the approved bytes", async () => {
    const input = await dataset("b.csv", "approved\n");
    const [staged] = await stagedDatasets(db.prisma, [input]);
    await chmod(staged!.path, 0o600);
    await writeFile(staged!.path, "tampered\n");
    const [checked] = await stagedDatasets(db.prisma, [input]);
    expect(await readFile(checked!.path, "utf8")).toBe("approved\n");
  });

  it("fails a run whose dataset's stored bytes no longer match the digest approved at intake", async () => {
    const input = await dataset("c.csv", "before\n");
    await db.prisma.dataset.update({ where: { id: input.datasetId }, data: { content: Buffer.from("after\n") } });
    await expect(stagedDatasets(db.prisma, [input])).rejects.toThrow(/c\.csv changed since the run was approved/);
  });

  it("returns a real path when the data directory is reached through a symlink", async () => {
    const linked = join(await mkdtemp(join(tmpdir(), "airlock-staged-link-")), "data");
    await symlink(dataDir, linked);
    setEnvForChildren({ AIRLOCK_DATA_DIR: linked });
    try {
      const input = await dataset("f.csv", "linked\n");
      const [staged] = await stagedDatasets(db.prisma, [input]);
      expect(staged!.path).toBe(join(await realpath(dataDir), "staged-datasets", input.sha256));
    } finally {
      setEnvForChildren({ AIRLOCK_DATA_DIR: dataDir });
    }
  });

  it("removes the files of datasets that are gone, and refuses a digest that is not a sha256", async () => {
    const gone = await dataset("d.csv", "old\n");
    const [old] = await stagedDatasets(db.prisma, [gone]);
    await db.prisma.dataset.delete({ where: { id: gone.datasetId } });
    await stagedDatasets(db.prisma, [await dataset("e.csv", "new\n")]);
    await expect(stat(old!.path)).rejects.toThrow(/ENOENT/);
    await expect(stagedDatasets(db.prisma, [{ ...gone, sha256: "../../etc/passwd" }])).rejects.toThrow(/not a sha256/);
  });
});
