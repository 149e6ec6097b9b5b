/**
 * Fault: PostgreSQL restarts while runs execute. The test starts a cluster of its own
 * (lib/db/postgres-server.ts, persistent, fsync on; never the shared test server), prepares it as
 * `npm start` prepares the embedded one, and runs a real worker process (`scripts/worker.ts`)
 * against it. While a run is in the middle of its tool calls, the cluster is stopped with
 * `pg_ctl stop -m fast` (then, in the second case, `-m immediate`: a crash, with recovery at the
 * next start), kept down long enough for the run's next call to need the database, and started
 * again on the same data directory and port.
 * Proves: the worker survives the outage and executes runs submitted after it; the run that was
 * executing ends in a terminal state with its audit event (by itself or through the recovery
 * sweep), and is never executed twice (counted in the ledger's durable outbox: each email at most
 * once, and none after its run ended); no submitted run is lost; the audit chain verifies.
 */
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import { postmasterPid, readClusterMajor, runAsPostgres, signal, waitForExit } from "@/lib/db/postgres-process";
import { startPostgres, type PostgresServer } from "@/lib/db/postgres-server";
import { prepareEmbeddedDatabase } from "@/lib/db/setup";
import { submitRun } from "@/lib/intake/submit";
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
import { isQueueConnectionLoss, runMaintenance } from "./queue";
import type { Runtime } from "./runtime";
import type { AgentActor } from "./service";

const HEARTBEAT_TIMEOUT_MS = 3000;
let parent: string;
let server: PostgresServer;
let appUrl: string;
let db: PrismaClient;
let runtime: Runtime;
let agent: AgentActor;
let config: FaultConfig;
let worker: AirlockProcess | undefined;

/** Stops the cluster as an operator would (pg_ctl stop -m <mode>) and returns once the postmaster is gone. */
async function stopCluster(mode: "fast" | "immediate"): Promise<void> {
  const clusterDir = join(server.dataDir, "pgdata");
  const pid = await postmasterPid(clusterDir);
  expect(pid).toBe(server.pid);
  const pgCtl = `/usr/lib/postgresql/${await readClusterMajor(clusterDir)}/bin/pg_ctl`;
  if (server.engine === "system" && existsSync(pgCtl)) {
    const stopped = await runAsPostgres(pgCtl, ["stop", "-D", clusterDir, "-m", mode, "-w", "-t", "20"]);
    expect(stopped.code, stopped.output).toBe(0);
  } else {
    // What pg_ctl -m sends the postmaster (the embedded build's pg_ctl is not on a fixed path).
    signal(pid!, mode === "fast" ? "SIGINT" : "SIGQUIT");
  }
  expect(await waitForExit(pid!, 20_000)).toBe(true);
}

async function startCluster(): Promise<void> {
  server = await startPostgres({ persistent: true, dataDir: server.dataDir, port: server.port });
}

const status = async (runId: string) => (await db.run.findUniqueOrThrow({ where: { id: runId } })).status;

/** Sweeps (3 s heartbeat timeout) until none of `runIds` is running; returns what the sweeps did. */
async function recoverAll(runIds: string[]) {
  const swept = { failed: 0, retried: 0 };
  await waitFor(
    "every run to leave `running`",
    async () => {
      const once = await runMaintenance(
        db,
        { execute: async (runId) => runtime.startExecution(runId), preview: async () => {} },
        { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, requeueAfterMs: 60_000 },
      );
      swept.failed += once.failed;
      swept.retried += once.retried;
      const statuses = await Promise.all(runIds.map(status));
      return statuses.every((s) => TERMINAL.includes(s));
    },
    45_000,
    250,
  );
  return swept;
}

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), "airlock-fault-pg-"));
  await chmod(parent, 0o755); // the postgres OS user must reach the cluster folder
  server = await startPostgres({ persistent: true, dataDir: join(parent, "cluster") });
  ({ appUrl } = await prepareEmbeddedDatabase(server));
  db = createPrismaClient(appUrl);
  ({ agent } = await seedFaultDatabase(db));
  config = await writeFaultConfig(parent, 2);
  runtime = await startSubmitter(db, appUrl, config);
  worker = spawnAirlock("scripts/worker.ts", {
    DATABASE_URL: appUrl,
    AIRLOCK_CONFIG: config.configFile,
    AIRLOCK_DATA_DIR: join(parent, "data"),
    AIRLOCK_BUDGET_CONCURRENT_RUNS: "50",
  });
  await worker.ready;
}, 120_000);

afterAll(async () => {
  await worker?.kill();
  await runtime?.close().catch(() => {});
  await db?.$disconnect();
  await server?.stop();
  if (parent) await rm(parent, { recursive: true, force: true });
}, 60_000);

describe.each(["fast", "immediate"] as const)("PostgreSQL stopped with -m %s mid-run, then started again", (mode) => {
  it("the worker carries on; the run ends once, with its audit events; nothing is lost", async () => {
    const mark = `pg-${mode}-${Date.now().toString(36)}`;
    const writer = await submitRun(runtime, agent, {
      code: `for (let i = 0; i < 6; i++) {
  await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "${mark}-" + i });
  await new Promise((r) => setTimeout(r, 300));
}
return "sent all";`,
      purpose: "six reminders, paced",
    });
    expect(writer.status).toBe("queued");
    await waitFor("the run to be part-way through its calls", async () => (await db.runToolCall.count({ where: { runId: writer.runId, outcome: "ok" } })) >= 2);
    expect(await status(writer.runId)).toBe("running");
    const okBefore = await db.runToolCall.count({ where: { runId: writer.runId, outcome: "ok" } });
    expect(okBefore).toBeLessThan(6);

    await stopCluster(mode);
    // Down for longer than the script's pause: its next call needs the database while it is gone.
    await new Promise((r) => setTimeout(r, 1500));
    await startCluster();

    // Whatever the run did during the outage, it reaches a terminal state: by itself, or through
    // the sweep once its executor's heartbeat is stale.
    const swept = await recoverAll([writer.runId]);
    const ended = await db.run.findUniqueOrThrow({ where: { id: writer.runId } });
    expect(TERMINAL).toContain(ended.status);
    expect(ended.attempt).toBe(1);
    expect(swept.retried).toBe(0);

    // Each email at most once; every completed call on record had its effect; none made after the end.
    const sent = ledgerEffects(config.stateFile, `${mark}-`);
    expect(new Set(sent).size).toBe(sent.length);
    const calls = await db.runToolCall.findMany({ where: { runId: writer.runId, readOnly: false } });
    expect(sent.length).toBeGreaterThanOrEqual(calls.filter((c) => c.outcome === "ok").length);
    expect(sent.length).toBeLessThanOrEqual(calls.length);
    if (ended.status === "succeeded") expect(sent).toHaveLength(6);
    else expect(ended.error).toMatchObject({ code: expect.stringMatching(/^(STORAGE_REJECTED|EXECUTOR_LOST)$/) });

    const events = (await db.auditEvent.findMany({ where: { subjectId: writer.runId }, orderBy: { id: "asc" } })).map((e) => e.action);
    expect(events.filter((a) => a === "run.running")).toHaveLength(1);
    expect(events.filter((a) => TERMINAL.map((s) => `run.${s}`).includes(a))).toEqual([`run.${ended.status}`]);

    // The worker outlived the outage (no crash, no exit) and takes runs submitted after it.
    expect(worker!.child.exitCode, worker!.output()).toBeNull();
    const after = await submitRun(runtime, agent, {
      code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", message: "${mark}-after" }); return sent.reminderId;`,
      purpose: "one reminder after the restart",
    });
    await waitFor("the run submitted after the restart to finish", async () => TERMINAL.includes(await status(after.runId)), 30_000);
    expect(await db.run.findUniqueOrThrow({ where: { id: after.runId } })).toMatchObject({ status: "succeeded", attempt: 1 });
    expect(ledgerEffects(config.stateFile, `${mark}-after`)).toHaveLength(1);
    expect(ledgerEffects(config.stateFile, `${mark}-`)).toHaveLength(sent.length + 1);

    expect(await db.run.count({ where: { status: { in: ["queued", "running"] } } })).toBe(0);
    expect(await auditVerifies(db)).toMatchObject({ ok: true, broken: null });
    expect(worker!.output()).not.toMatch(/Unhandled|uncaught/i);
  }, 120_000);
});

describe("what the worker survives (scripts/worker.ts, surviveConnectionLoss)", () => {
  const failure = (code: string, message: string, frame: string) => Object.assign(new Error(message), { code, stack: `Error: ${message}\n    at ${frame}` });

  it("is the job queue's lost or refused connection, and nothing else", () => {
    // The rejection that ended the worker at `pg_ctl stop -m immediate` before the fix.
    expect(isQueueConnectionLoss(failure("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432", "/app/node_modules/pg-pool/index.js:45:11"))).toBe(true);
    expect(isQueueConnectionLoss(new Error("Connection terminated unexpectedly\n"))).toBe(false);
    expect(isQueueConnectionLoss(failure("57P01", "terminating connection due to administrator command", "/app/node_modules/pg/lib/client.js:1:1"))).toBe(true);
    // A query the database refused, or a connection that is not the queue's, still ends the process.
    expect(isQueueConnectionLoss(failure("23505", "duplicate key value", "/app/node_modules/pg/lib/client.js:1:1"))).toBe(false);
    expect(isQueueConnectionLoss(failure("ECONNRESET", "socket hang up", "/app/lib/broker/http.ts:10:5"))).toBe(false);
    expect(isQueueConnectionLoss("ECONNREFUSED")).toBe(false);
  });
});
