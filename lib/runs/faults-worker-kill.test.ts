/**
 * Fault: a worker process (`scripts/worker.ts`) is SIGKILLed, with its upstream and sandboxes,
 * while two runs are in the middle of their tool calls and a third waits in the queue behind them.
 * Proves, against the ledger's durable state: no proposal is lost (the queued run is executed by
 * the next worker, once); nothing is executed twice (the run that had sent emails ends failed with
 * EXECUTOR_LOST and sends no more; the read-only one is retried once, attempt 2); every run ends in
 * a terminal state with its audit events; and the audit chain verifies.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
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
import { toolCallsDigest } from "@/lib/audit/seal";
import { runMaintenance } from "./queue";
import type { Runtime } from "./runtime";
import type { AgentActor } from "./service";

const HEARTBEAT_TIMEOUT_MS = 3000;
const MARK = `kill-${Date.now().toString(36)}`;
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
let config: FaultConfig;
let dataDir: string;
const processes: AirlockProcess[] = [];

function startWorker(): AirlockProcess {
  const worker = spawnAirlock("scripts/worker.ts", {
    DATABASE_URL: db.url,
    AIRLOCK_CONFIG: config.configFile,
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_BUDGET_CONCURRENT_RUNS: "50",
  });
  processes.push(worker);
  return worker;
}

const status = async (runId: string) => (await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status;
const actions = async (runId: string) => (await db.prisma.auditEvent.findMany({ where: { subjectId: runId }, orderBy: { id: "asc" } })).map((e) => e.action);

beforeAll(async () => {
  db = await createTestDatabase();
  ({ agent } = await seedFaultDatabase(db.prisma));
  dataDir = await mkdtemp(join(tmpdir(), "airlock-fault-kill-"));
  config = await writeFaultConfig(dataDir, 2);
  // This process only submits (and enqueues); the workers execute.
  runtime = await startSubmitter(db.prisma, db.url, config);
}, 120_000);

afterEach(async () => {
  for (const worker of processes.splice(0)) await worker.kill();
});

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("a worker SIGKILLed mid-run", () => {
  it("loses no run, executes none twice, ends every run with its audit events", async () => {
    const first = startWorker();
    await first.ready;

    const writer = await submitRun(runtime, agent, {
      code: `for (let i = 0; i < 6; i++) {
  await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "${MARK}-w-" + i });
  await new Promise((r) => setTimeout(r, 800));
}
return "sent all";`,
      purpose: "six reminders, paced",
    });
    const reader = await submitRun(runtime, agent, {
      code: `let n = 0;
for (let i = 0; i < 6; i++) {
  n += (await tools.ledger.listInvoices({ limit: 2 })).invoices.length;
  await new Promise((r) => setTimeout(r, 800));
}
return n;`,
      purpose: "six reads, paced",
    });
    expect([writer.status, reader.status]).toEqual(["queued", "queued"]);

    // Both slots of the worker are busy, each run part-way through its calls.
    await waitFor("both runs mid-way through their tool calls", async () => {
      const [writes, reads] = await Promise.all([
        db.prisma.runToolCall.count({ where: { runId: writer.runId, readOnly: false, outcome: "ok" } }),
        db.prisma.runToolCall.count({ where: { runId: reader.runId, outcome: "ok" } }),
      ]);
      return writes >= 2 && reads >= 2;
    });
    const behind = await submitRun(runtime, agent, {
      code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", message: "${MARK}-q" }); return sent.reminderId;`,
      purpose: "one reminder, queued behind",
    });

    await first.kill();
    // The fault happened mid-run: both held by the dead executor and unfinished, the third waiting.
    expect(await status(writer.runId)).toBe("running");
    expect(await status(reader.runId)).toBe("running");
    expect(await status(behind.runId)).toBe("queued");
    const writerCalls = await db.prisma.runToolCall.findMany({ where: { runId: writer.runId, readOnly: false } });
    expect(writerCalls.length).toBeLessThan(6);
    const sentBeforeKill = ledgerEffects(config.stateFile, `${MARK}-w-`);
    // Each completed call had its effect; a call on record as started may or may not have reached the upstream.
    expect(sentBeforeKill.length).toBeGreaterThanOrEqual(writerCalls.filter((c) => c.outcome === "ok").length);
    expect(sentBeforeKill.length).toBeLessThanOrEqual(writerCalls.length);

    const second = startWorker();
    await second.ready;
    // The run that was waiting in the queue is taken by the new worker, without any sweep.
    await waitFor("the queued run to finish on the new worker", async () => TERMINAL.includes(await status(behind.runId)), 30_000);

    // The sweep (it runs every minute in each worker; here with a 3 s heartbeat timeout) finds the
    // dead executor's runs once their heartbeat is stale, and only those.
    const swept = { failed: 0, retried: 0 };
    await waitFor(
      "the sweep to recover both lost runs",
      async () => {
        const once = await runMaintenance(
          db.prisma,
          { execute: async (runId) => runtime.startExecution(runId), preview: async () => {} },
          { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, requeueAfterMs: 60_000 },
        );
        swept.failed += once.failed;
        swept.retried += once.retried;
        return swept.failed + swept.retried >= 2;
      },
      15_000,
      250,
    );
    expect(swept).toEqual({ failed: 1, retried: 1 });
    await waitFor("the retried read to finish", async () => TERMINAL.includes(await status(reader.runId)), 30_000);

    // The writer is not run again: a person decides (its calls may have had an effect).
    const lost = await db.prisma.run.findUniqueOrThrow({ where: { id: writer.runId } });
    expect(lost).toMatchObject({ status: "failed", attempt: 1, error: { code: "EXECUTOR_LOST" } });
    expect(ledgerEffects(config.stateFile, `${MARK}-w-`)).toEqual(sentBeforeKill);
    // No message was sent twice.
    expect(new Set(sentBeforeKill).size).toBe(sentBeforeKill.length);

    const retried = await db.prisma.run.findUniqueOrThrow({ where: { id: reader.runId } });
    expect(retried).toMatchObject({ status: "succeeded", attempt: 2, result: 12 });
    const queued = await db.prisma.run.findUniqueOrThrow({ where: { id: behind.runId } });
    expect(queued).toMatchObject({ status: "succeeded", attempt: 1 });
    expect(ledgerEffects(config.stateFile, `${MARK}-q`)).toHaveLength(1);

    // Audit: one execution each (two for the retried read), each ended by its terminal event, which seals every call.
    const writerEvents = await actions(writer.runId);
    expect(writerEvents.filter((a) => a === "run.running")).toHaveLength(1);
    expect(writerEvents.at(-1)).toBe("run.failed");
    const readerEvents = await actions(reader.runId);
    expect(readerEvents.filter((a) => a === "run.running")).toHaveLength(2);
    expect(readerEvents).toContain("run.requeued");
    expect(readerEvents.at(-1)).toBe("run.succeeded");
    expect((await actions(behind.runId)).filter((a) => a.startsWith("run.") && a !== "run.viewed")).toEqual([
      "run.submitted",
      "run.analyzed",
      "run.auto_approved",
      "run.queued",
      "run.running",
      "run.succeeded",
    ]);
    for (const run of [writer, reader, behind]) {
      const calls = await db.prisma.runToolCall.findMany({ where: { runId: run.runId }, orderBy: { seq: "asc" } });
      const terminal = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: run.runId, action: { in: ["run.succeeded", "run.failed"] } } });
      expect((terminal.data as { toolCallsDigest: string }).toolCallsDigest).toBe(toolCallsDigest(calls));
    }
    expect(await db.prisma.run.count({ where: { status: { in: ["queued", "running"] } } })).toBe(0);
    expect(await auditVerifies(db.prisma)).toMatchObject({ ok: true, broken: null });
  }, 120_000);
});
