import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCheckpoints, type CheckpointConfig } from "@/lib/audit/checkpoints";
import { append, seedRun, tamper, tempCheckpoints } from "@/lib/audit/testing";
import { setEnvForChildren } from "@/lib/env";
import { appendBackdated } from "@/lib/testing/audit-log";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { auditCommand, type AuditCommandDeps } from "./audit";
import { runCli } from "./main";

let db: TestDatabase;
let checkpoints: CheckpointConfig;
let deps: AuditCommandDeps;

function capture() {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    io: { stdout: (s: string) => void (out.stdout += s), stderr: (s: string) => void (out.stderr += s), readStdin: async () => "" },
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  checkpoints = await tempCheckpoints();
  deps = { withDatabase: (fn) => fn(db.prisma), checkpoints: () => checkpoints };
  await seedRun(db.prisma, { purpose: "Refund a duplicate", calls: 1 });
  for (let i = 0; i < 5; i++) await append(db.prisma, "test.event", { type: "thing", id: String(i) }, { i });
});
afterAll(() => db?.drop());

describe("airlock audit", () => {
  it("prints usage and exits 2 on bad arguments", async () => {
    for (const argv of [
      [],
      ["frobnicate"],
      ["verify", "--from", "abc"],
      ["verify", "--bogus"],
      ["export"],
      ["export", "--format", "xml"],
      ["export", "--format", "csv", "--status", "exploded"],
      ["verify", "extra"],
    ]) {
      const { io, out } = capture();
      expect(await auditCommand(argv, io, deps)).toBe(2);
      expect(out.stderr).toContain("Usage:");
    }
  });

  it("verify: exit 0 with the head, and signs a checkpoint", async () => {
    const { io, out } = capture();
    expect(await auditCommand(["verify"], io, deps)).toBe(0);
    expect(out.stdout).toMatch(/^OK: \d+ event\(s\) verified from genesis, 1 tool-call seal/);
    expect(out.stdout).toMatch(/Head: #\d+ [0-9a-f]{64}/);
    expect(out.stdout).toContain("Checkpoint written:");
    const json = capture();
    expect(await auditCommand(["verify", "--from", "2", "--json"], json.io, deps)).toBe(0);
    expect(JSON.parse(json.out.stdout)).toMatchObject({ ok: true, from: "2", checkpointFile: null });
  });

  it("export: JSONL to stdout with the manifest first; CSV with the manifest in a file", async () => {
    const jsonl = capture();
    expect(await auditCommand(["export", "--format", "jsonl", "--q", "refund"], jsonl.io, deps)).toBe(0);
    const lines = jsonl.out.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0].manifest).toMatchObject({
      format: "jsonl",
      rowCount: 2,
      exportedBy: expect.stringMatching(/^system:cli:.+@.+$/),
      filters: { q: "refund" },
    });
    expect(lines.slice(1).map((l) => l.action)).toEqual(["run.submitted", "run.succeeded"]);
    expect(jsonl.out.stderr).toMatch(/Exported 2 event\(s\); chain head #\d+/);

    const csv = capture();
    const manifestFile = join(checkpoints.dir, "..", "manifest.json");
    expect(await auditCommand(["export", "--format", "csv", "--since", "2000-01-01", "--manifest", manifestFile], csv.io, deps)).toBe(0);
    const manifest = JSON.parse(await readFile(manifestFile, "utf8"));
    expect(csv.out.stdout.trimEnd().split("\r\n")).toHaveLength(manifest.rowCount + 1);
    expect(manifest.chainHead.hash).toMatch(/^[0-9a-f]{64}$/);

    // A manifest that cannot be written is refused before anything is exported (not after the whole stream).
    const nowhere = capture();
    await expect(auditCommand(["export", "--format", "csv", "--manifest", "/nonexistent-dir/m.json"], nowhere.io, deps)).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("--manifest /nonexistent-dir/m.json: cannot write there"),
    });
    expect(nowhere.out.stdout).toBe("");
  });

  it("verify --from past the last event is refused naming the last one, before anything is verified or recorded", async () => {
    for (const past of [1n, 999_999n]) {
      const last = await db.prisma.auditEvent.findFirstOrThrow({ orderBy: { id: "desc" } });
      const from = String(last.id + past);
      const { io, out } = capture();
      const refusal = await auditCommand(["verify", "--from", from], io, deps).catch((error: unknown) => error);
      expect(refusal).toMatchObject({ code: "bad_request", message: `--from ${from} is past the log's last event (#${last.id}); nothing was verified.` });
      expect(out.stdout).toBe("");
      // Just past the end too (its own audit.verified event would have been the event it asked for).
      expect((await db.prisma.auditEvent.findFirstOrThrow({ orderBy: { id: "desc" } })).id).toBe(last.id);
    }
  });

  it("verify: exit 1 naming the first broken event after tampering", async () => {
    const target = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "test.event" }, orderBy: { id: "asc" } });
    await tamper(db.prisma, `UPDATE "AuditEvent" SET action = 'test.forged' WHERE id = ${target.id}`);
    const { io, out } = capture();
    expect(await auditCommand(["verify"], io, deps)).toBe(1);
    expect(out.stderr).toContain(`BROKEN at event #${target.id}: hash_mismatch`);
  });
});

describe("airlock audit verify, through the CLI's entry point, on a log no checkpoint covers", () => {
  let old: TestDatabase;
  let config: CheckpointConfig;
  let first: bigint;

  beforeAll(async () => {
    old = await createTestDatabase();
    config = await tempCheckpoints();
    // An hour-old log and an empty checkpoint directory (deleted, or never written).
    const hourAgo = Date.now() - 60 * 60_000;
    first = await appendBackdated(old.prisma, new Date(hourAgo), "test.old");
    for (let i = 1; i < 3; i++) await appendBackdated(old.prisma, new Date(hourAgo + i * 1000), "test.old");
    setEnvForChildren({ DATABASE_URL: old.url, AIRLOCK_AUDIT_KEY_FILE: config.keyFile, AIRLOCK_AUDIT_CHECKPOINT_DIR: config.dir });
  });
  afterAll(() => old?.drop());

  it("exits 1 saying checkpoints are missing, every time, and writes none", async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const { io, out } = capture();
      expect(await runCli(["audit", "verify"], io)).toBe(1);
      expect(out.stderr).toContain(`CHECKPOINTS MISSING from event #${first}: checkpoints_missing`);
      expect(out.stderr).toMatch(/no signed checkpoint covers event/);
      expect(out.stdout).toBe("");
      expect(await loadCheckpoints(config)).toEqual([]);
    }
    // The scheduled checkpoint has nothing to extend from either.
    const job = capture();
    expect(await runCli(["audit", "checkpoint"], job.io)).toBe(1);
    expect(await loadCheckpoints(config)).toEqual([]);
  });

  it("checkpoint --bootstrap signs a first checkpoint; verify then exits 0", async () => {
    const bootstrap = capture();
    expect(await runCli(["audit", "checkpoint", "--bootstrap"], bootstrap.io)).toBe(0);
    expect(bootstrap.out.stdout).toContain("Checkpoint written:");
    const { io, out } = capture();
    expect(await runCli(["audit", "verify"], io)).toBe(0);
    expect(out.stdout).toMatch(/^OK: \d+ event\(s\) verified from genesis/);
  });
});
