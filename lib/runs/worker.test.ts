/**
 * Executors as separate processes (`scripts/worker.ts`), coordinated only through PostgreSQL:
 * a killed worker leaves no run stuck in `running` (EXECUTOR_LOST once a call that may have had an
 * effect was made, otherwise one retry), and SIGTERM drains the runs in flight.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { childProcessEnv } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { toolCallsDigest } from "@/lib/audit/seal";
import { runMaintenance } from "./queue";
import { transitionRun } from "./states";
import { createRuntime, demoConfig, type Runtime } from "./runtime";
import { submitRun } from "@/lib/intake/submit";
import { getRun, type AgentActor } from "./service";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
let configFile: string;
const workers: ChildProcess[] = [];

function startWorker(): { child: ChildProcess; ready: Promise<void>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ["--conditions=react-server", "--import", "tsx", "scripts/worker.ts"], {
    cwd: process.cwd(),
    env: { ...childProcessEnv(), DATABASE_URL: db.url, AIRLOCK_CONFIG: configFile },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  workers.push(child);
  let output = "";
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("ready")) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`worker exited (${code}) before ready:\n${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, ready, exited };
}

async function waitForStatus(runId: string, status: string, timeout = 30_000): Promise<void> {
  await expect
    .poll(async () => (await db.prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } })).status, { timeout, interval: 100 })
    .toBe(status);
}

const HEARTBEAT_TIMEOUT_MS = 1000;

/**
 * Sweeps as of a moment past the heartbeat timeout, instead of sleeping until the dead executor's
 * last heartbeat (written before it was killed, so before now) has gone stale.
 */
function afterHeartbeatTimeout(): Date {
  return new Date(Date.now() + HEARTBEAT_TIMEOUT_MS + 200);
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "w", ownerEmail: "owner@example.com" }));
  const ownerId = (await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } })).ownerId;
  agent = { type: "agent", id: created.agentId, name: "w", ownerId, scopes: created.scopes };
  const dir = await mkdtemp(join(tmpdir(), "airlock-worker-"));
  const config = demoConfig(join(dir, "ledger.json"));
  configFile = join(dir, "airlock.config.json");
  const ledger = config.servers.ledger!;
  await writeFile(
    configFile,
    JSON.stringify({
      servers: { ledger: { ...ledger, tools: { sendReminderEmail: { dataClass: "pii" } } } },
      sandbox: { isolation: "strict", poolSize: 1 },
    }),
  );
  // This process only submits and enqueues; the workers execute.
  runtime = await createRuntime(db.prisma, config, { databaseUrl: db.url, execute: false });
}, 120_000);

afterEach(() => {
  for (const child of workers.splice(0)) {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
});

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("worker processes", () => {
  it("execute a queued run, and SIGTERM lets a run in flight finish before exiting", async () => {
    const worker = startWorker();
    await worker.ready;
    const view = await submitRun(runtime, agent, {
      code: `await new Promise((r) => setTimeout(r, 1500)); const p = await tools.ledger.listInvoices({ limit: 3 }); return p.invoices.length;`,
      purpose: "slow read",
    });
    expect(view.status).toBe("queued");
    await waitForStatus(view.runId, "running");
    process.kill(worker.child.pid!, "SIGTERM");
    expect(await worker.exited).toBe(0);
    const done = await getRun(runtime, agent, { runId: view.runId });
    expect(done).toMatchObject({ status: "succeeded", result: 3 });
    expect(await db.prisma.run.count({ where: { status: "running" } })).toBe(0);
  }, 90_000);

  it("a killed worker's run becomes failed with EXECUTOR_LOST once it called a tool that is not read-only", async () => {
    const worker = startWorker();
    await worker.ready;
    const view = await submitRun(runtime, agent, {
      // The plan preview answers with a placeholder id; only the real run pauses after the email.
      code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "late" });
if (!sent.reminderId.startsWith("@plan:")) await new Promise((r) => setTimeout(r, 20000));`,
      purpose: "remind, then pause",
    });
    expect(view.status).toBe("previewing");
    await waitForStatus(view.runId, "pending_review");
    // Stand-in for the reviewers' approval (tested with the review service), through the state machine.
    await db.prisma.$transaction(async (tx) => {
      await transitionRun(tx, system, { runId: view.runId, from: "pending_review", to: "approved" });
      await transitionRun(tx, system, { runId: view.runId, from: "approved", to: "queued" });
    });
    runtime.startExecution(view.runId);
    // The call was recorded (as "started") before it reached the upstream.
    await expect.poll(() => db.prisma.runToolCall.count({ where: { runId: view.runId, readOnly: false, phase: "apply" } }), { timeout: 20_000 }).toBe(1);
    process.kill(-worker.child.pid!, "SIGKILL");
    await worker.exited;
    const swept = await runMaintenance(
      db.prisma,
      { execute: async () => {}, preview: async () => {} },
      { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, requeueAfterMs: 60_000 },
      afterHeartbeatTimeout(),
    );
    expect(swept.failed).toBe(1);
    const lost = await getRun(runtime, agent, { runId: view.runId });
    expect(lost).toMatchObject({ status: "failed", error: { code: "EXECUTOR_LOST" } });
    expect(lost.error?.message).toMatch(/not read-only/);
    expect(await db.prisma.run.count({ where: { status: "running" } })).toBe(0);
  }, 90_000);

  it("a killed worker's run is retried by another worker when every tool is idempotent", async () => {
    const first = startWorker();
    await first.ready;
    const view = await submitRun(runtime, agent, {
      code: `await tools.ledger.listRefunds({ limit: 1 }); await new Promise((r) => setTimeout(r, 3000)); return (await tools.ledger.listRefunds({ limit: 2 })).refunds.length;`,
      purpose: "idempotent read",
    });
    await waitForStatus(view.runId, "running");
    // The first attempt's call is on record before its executor dies.
    await expect.poll(() => db.prisma.runToolCall.count({ where: { runId: view.runId } }), { timeout: 10_000 }).toBe(1);
    process.kill(-first.child.pid!, "SIGKILL");
    await first.exited;
    const second = startWorker();
    await second.ready;
    const swept = await runMaintenance(
      db.prisma,
      { execute: async (runId) => runtime.startExecution(runId), preview: async () => {} },
      { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, requeueAfterMs: 60_000 },
      afterHeartbeatTimeout(),
    );
    expect(swept.retried).toBe(1);
    await waitForStatus(view.runId, "succeeded");
    expect(await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } })).toMatchObject({ attempt: 2 });
    const requeued = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: view.runId, action: "run.requeued" } });
    expect(requeued.data).toMatchObject({ attempt: 2, reason: "EXECUTOR_LOST" });
    const events = await db.prisma.auditEvent.findMany({ where: { subjectId: view.runId, action: "run.running" } });
    expect(events).toHaveLength(2);
    // Both attempts' calls are kept, numbered in order, and sealed together by the terminal event.
    const calls = await db.prisma.runToolCall.findMany({ where: { runId: view.runId }, orderBy: { seq: "asc" } });
    expect(calls.map((c) => c.seq)).toEqual([1, 2, 3]);
    const terminal = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: view.runId, action: "run.succeeded" } });
    expect((terminal.data as { toolCallsDigest: string; toolCalls: number }).toolCallsDigest).toBe(toolCallsDigest(calls));
  }, 90_000);
});
