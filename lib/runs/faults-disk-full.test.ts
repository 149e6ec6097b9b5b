/**
 * Fault: the filesystem that holds the run staging directories is full. The sandbox stages its
 * member directories (and a copy of each input) under os.tmpdir(); the test starts a real
 * worker (`scripts/worker.ts`) with TMPDIR on a 2 MiB tmpfs it mounts itself, proves a run stages
 * and succeeds there, fills the mount to the last byte, and submits runs.
 * Proves: every run submitted while the disk is full ends in a terminal state with a typed error
 * code and a one-line message (no stack), with its audit events; a run that could not be staged
 * makes no tool call (the ledger's durable outbox has nothing from it); the worker stays up, and
 * once space is freed it executes runs again, without a restart; the audit chain verifies.
 * Needs root to mount the tmpfs; where the mount is refused the test is skipped, saying why.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, readdirSync, statfsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { RUN_ERROR_CODES } from "@/lib/errors";
import { submitRun } from "@/lib/intake/submit";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import {
  auditVerifies,
  ledgerEffects,
  seedFaultDatabase,
  spawnAirlock,
  startSubmitter,
  TERMINAL,
  waitFor,
  writeFaultConfig,
  type AirlockProcess,
  type FaultConfig,
} from "@/lib/testing/faults";
import { createDataset } from "./datasets";
import type { Runtime } from "./runtime";
import type { AgentActor } from "./service";

const system: Actor = { type: "system", name: "test" };
const MARK = `disk-${Date.now().toString(36)}`;
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
let config: FaultConfig;
let scratch: string;
let mountDir: string;
let mountRefused: string | null = null;
let worker: AirlockProcess | undefined;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "airlock-fault-disk-"));
  await chmod(scratch, 0o711); // the sandbox identity traverses it to its member directories, as it does /tmp
  mountDir = join(scratch, "tmp");
  await mkdir(mountDir);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=1777", "airlock-fault-tmp", mountDir], { stdio: "pipe" });
  } catch (error) {
    mountRefused = String((error as { stderr?: Buffer }).stderr ?? error).trim();
    return;
  }
  db = await createTestDatabase();
  ({ agent } = await seedFaultDatabase(db.prisma));
  await db.prisma.$transaction((tx) =>
    createDataset(tx, system, { name: "rates.csv", dataClass: "public", mediaType: "text/csv", content: "currency,rate\nEUR,1.08\nGBP,0.86\n" }),
  );
  config = await writeFaultConfig(scratch, 1);
  runtime = await startSubmitter(db.prisma, db.url, config);
  worker = spawnAirlock("scripts/worker.ts", {
    DATABASE_URL: db.url,
    AIRLOCK_CONFIG: config.configFile,
    AIRLOCK_DATA_DIR: join(scratch, "data"),
    AIRLOCK_BUDGET_CONCURRENT_RUNS: "50",
    // Staging (inputs, sandbox members) lands on the small mount; tsx keeps no cache there, so
    // everything on it is the worker's staging or the test's filler.
    TMPDIR: mountDir,
    TSX_DISABLE_CACHE: "1",
  });
  await worker.ready;
}, 120_000);

afterAll(async () => {
  await worker?.kill();
  await runtime?.close();
  await db?.drop();
  if (!mountRefused && mountDir) execFileSync("umount", ["--lazy", mountDir]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
}, 60_000);

/** Whether no sandbox member directory on the mount holds a staged file (code or input): only warm members are left. */
function nothingStaged(): boolean {
  const members = readdirSync(mountDir).filter((name) => name.startsWith("airlock-sbx-"));
  return members.every((member) =>
    ["code", "inputs"].every((dir) => {
      try {
        return readdirSync(join(mountDir, member, dir)).length === 0;
      } catch {
        return true; // being removed
      }
    }),
  );
}

const view = (runId: string) => db.prisma.run.findUniqueOrThrow({ where: { id: runId } });

async function ended(runId: string) {
  await waitFor(`run ${runId} to end`, async () => TERMINAL.includes((await view(runId)).status), 45_000, 100);
  return view(runId);
}

/** Reads the staged input and sends one reminder naming `tag`. */
const stagedWrite = (tag: string) => ({
  code: `const rates = inputs.text("rates.csv").trim().split("\\n").length - 1;
const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "${MARK}-${tag} " + rates });
return { rates, reminder: sent.reminderId };`,
  purpose: `a staged input, then one reminder (${tag})`,
  inputs: ["rates.csv"],
});

describe("the staging filesystem is full", () => {
  it("runs end with a typed error and no effect, the worker stays up, and works again once space is freed", async (context) => {
    if (mountRefused) {
      context.skip(`cannot mount a tmpfs for TMPDIR here (needs root): ${mountRefused}`);
      return;
    }
    // Staging on this mount works: the baseline run succeeds and sends its one reminder.
    const before = await submitRun(runtime, agent, stagedWrite("before"));
    const baseline = await ended(before.runId);
    expect(baseline.error).toBeNull();
    expect(baseline).toMatchObject({ status: "succeeded", result: { rates: 2 } });
    expect(ledgerEffects(config.stateFile, `${MARK}-before`)).toHaveLength(1);

    // A used sandbox member's teardown frees the pages its run staged: wait for the baseline's, or
    // it could free them after the mount is full and let a run through.
    await waitFor("the baseline run's sandbox member to be torn down", async () => nothingStaged(), 15_000, 50);

    // Fill the mount to the last byte.
    const filler = join(mountDir, "filler");
    const chunk = Buffer.alloc(64 * 1024, 1);
    for (;;) {
      try {
        appendFileSync(filler, chunk);
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
        break;
      }
    }
    for (let size = 4096; size >= 1; size = Math.floor(size / 2)) {
      try {
        for (;;) appendFileSync(filler, Buffer.alloc(size, 1));
      } catch {
        /* this size no longer fits; try a smaller one */
      }
    }
    expect(statfsSync(mountDir).bavail).toBe(0);

    const full = [
      { tag: "full-1", submitted: await submitRun(runtime, agent, stagedWrite("full-1")) },
      {
        tag: null,
        submitted: await submitRun(runtime, agent, { code: `return (await tools.ledger.listInvoices({ limit: 3 })).invoices.length;`, purpose: "a read" }),
      },
      { tag: "full-2", submitted: await submitRun(runtime, agent, stagedWrite("full-2")) },
    ];
    for (const { tag, submitted } of full) {
      const run = await ended(submitted.runId);
      // Each fails before its script runs: a typed code from the registry and a one-line message, not a stack.
      expect(run).toMatchObject({ status: "failed", error: { code: "SANDBOX_UNAVAILABLE" } });
      const { code, message } = run.error as { code: string; message: string };
      expect(RUN_ERROR_CODES).toContain(code);
      expect(message).toMatch(/ENOSPC: no space left on device/);
      expect(message).not.toMatch(/\n\s+at /);
      // No tool call was made or recorded, and the upstream saw nothing of it.
      expect(await db.prisma.runToolCall.count({ where: { runId: submitted.runId } })).toBe(0);
      if (tag) expect(ledgerEffects(config.stateFile, `${MARK}-${tag}`)).toHaveLength(0);
      // Claimed once, ended once, on record.
      const events = (await db.prisma.auditEvent.findMany({ where: { subjectId: submitted.runId }, orderBy: { id: "asc" } })).map((e) => e.action);
      expect(events.filter((a) => a === "run.running")).toHaveLength(1);
      expect(events.filter((a) => TERMINAL.map((s) => `run.${s}`).includes(a))).toEqual(["run.failed"]);
    }
    expect(worker!.child.exitCode, worker!.output()).toBeNull();

    // Space freed: the same worker executes again, without a restart.
    await rm(filler);
    const after = await submitRun(runtime, agent, stagedWrite("after"));
    expect(await ended(after.runId)).toMatchObject({ status: "succeeded", result: { rates: 2 } });
    expect(ledgerEffects(config.stateFile, `${MARK}-after`)).toHaveLength(1);

    expect(await db.prisma.run.count({ where: { status: { in: ["queued", "running"] } } })).toBe(0);
    expect(await auditVerifies(db.prisma)).toMatchObject({ ok: true, broken: null });
    expect(worker!.child.exitCode, worker!.output()).toBeNull();
  }, 120_000);
});
