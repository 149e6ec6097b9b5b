/**
 * Fair share of the executors' slots on real parts: PostgreSQL, graphile-worker queues, the demo
 * ledger, the shipped policies and the strict sandbox. Two executors (runtimes) with one slot each
 * make a cluster of two slots; they share nothing but the database.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { createPrismaClient } from "@/lib/db";
import { submitRun } from "@/lib/intake/submit";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { registerExecutor, releaseSlot, takeSlot, takeSlotAtIntake } from "./fair-share";
import { createRuntime, demoConfig, type Runtime } from "./runtime";
import type { AgentActor } from "./service";

const system: Actor = { type: "system", name: "test" };

async function setUp(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  return db;
}

async function makeAgent(db: TestDatabase, name: string): Promise<AgentActor> {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com" }));
  const ownerId = (await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } })).ownerId;
  return { type: "agent", id: created.agentId, name, ownerId, scopes: created.scopes };
}

async function startRuntime(db: TestDatabase, execute: boolean): Promise<Runtime> {
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  return createRuntime(db.prisma, { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } }, { databaseUrl: db.url, execute });
}

describe("two executors, one slot each", () => {
  let db: TestDatabase;
  const runtimes: Runtime[] = [];

  beforeAll(async () => {
    db = await setUp();
    runtimes.push(await startRuntime(db, true), await startRuntime(db, true));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(runtimes.map((runtime) => runtime.close()));
    await db?.drop();
  });

  const statusOf = async (runId: string) => (await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status;

  it("one agent's four CPU-bound runs do not keep another agent's trivial run, submitted after them, waiting (done within 3 s)", async () => {
    const [runtime] = runtimes as [Runtime];
    const hog = await makeAgent(db, "hog");
    const light = await makeAgent(db, "light");
    const held: string[] = [];
    const hogRuns: string[] = [];
    for (let n = 0; n < 4; n++) {
      // Held back: neither claimed at intake nor handed to the queue until their limits are edited.
      const view = await submitRun({ ...runtime, reserveStart: () => null, startExecution: (runId) => held.push(runId) }, hog, {
        code: `while (true) {} // ${n}`,
        purpose: `spin ${n}`,
        language: "javascript",
      });
      expect(view.status).toBe("queued");
      hogRuns.push(view.runId);
    }
    // A few seconds' wall clock instead of the default 30 s, before they are handed to the queue
    // (limits are write-once: the test edits them as the superuser with triggers off).
    for (const runId of held) {
      const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
      await db.prisma.$transaction([
        db.prisma.$executeRawUnsafe(`SET LOCAL session_replication_role = replica`),
        db.prisma.run.update({ where: { id: runId }, data: { limits: { ...(run.limits as object), timeoutMs: 2_000 } } }),
      ]);
      runtime.startExecution(runId);
    }
    // Alone, the hog may use both slots.
    await expect.poll(() => db.prisma.run.count({ where: { agentId: hog.id, status: "running" } }), { timeout: 20_000, interval: 50 }).toBe(2);

    const submitted = Date.now();
    const view = await submitRun(runtime, light, { code: `return 1;`, purpose: "trivial", language: "javascript" });
    await expect.poll(() => statusOf(view.runId), { timeout: 20_000, interval: 25 }).toBe("succeeded");
    expect(Date.now() - submitted).toBeLessThan(3_000);

    // Every deferred run is picked up once a slot frees: none lost, none retried, each claimed once.
    for (const runId of hogRuns) await expect.poll(() => statusOf(runId), { timeout: 30_000, interval: 100 }).toBe("timed_out");
    const runs = await db.prisma.run.findMany({ where: { id: { in: [...hogRuns, view.runId] } } });
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1, 1, 1]);
    const events = await db.prisma.auditEvent.findMany({ where: { subjectId: { in: hogRuns } } });
    for (const runId of hogRuns) expect(events.filter((e) => e.subjectId === runId && e.action === "run.running")).toHaveLength(1);
    const deferred = events.filter((e) => e.action === "run.deferred");
    expect(deferred.length).toBeGreaterThan(0);
    for (const event of deferred) expect(event.data).toMatchObject({ held: 1, share: 1, slots: 2 });
    const light1 = runs.find((r) => r.id === view.runId)!;
    const lastHogStart = Math.max(...runs.filter((r) => r.id !== view.runId).map((r) => r.startedAt!.getTime()));
    expect(light1.startedAt!.getTime()).toBeLessThan(lastHogStart);
    expect(await db.prisma.runSlot.count()).toBe(0);
  }, 90_000);

  it("intake defers a run at its share on an idle executor, gives that executor's slot back, and the run is woken and executed once", async () => {
    const [first, second] = runtimes as [Runtime, Runtime];
    const busy = await makeAgent(db, "busy");
    const waiting = await makeAgent(db, "waiting");
    const spin = (n: number) => ({
      code: `const end = Date.now() + 1500; while (Date.now() < end) {} return ${n};`,
      purpose: `busy ${n}`,
      language: "javascript" as const,
    });
    // The second executor's idle slot: claimed at intake.
    const holding = await submitRun(second, busy, spin(1));
    expect(holding.status).toBe("running");
    // Another agent's run waits in the queue, held back from every executor.
    const patient = await submitRun({ ...first, reserveStart: () => null, startExecution: () => {} }, waiting, spin(2));
    expect(patient.status).toBe("queued");

    // The first executor's slot is idle, but the busy agent holds its share (1 of 2) while another waits.
    const deferred = await submitRun(first, busy, spin(3));
    expect(deferred.status).toBe("queued");
    expect(await db.prisma.runSlot.findUnique({ where: { runId: deferred.runId } })).toMatchObject({ executorId: null });
    expect(await db.prisma.auditEvent.count({ where: { subjectId: deferred.runId, action: "run.deferred" } })).toBe(1);

    // The slot intake reserved went back: the waiting agent's run takes it at once.
    first.startExecution(patient.runId);
    for (const view of [holding, patient, deferred]) {
      await expect.poll(() => statusOf(view.runId), { timeout: 20_000, interval: 50 }).toBe("succeeded");
    }
    const ids = [holding.runId, patient.runId, deferred.runId];
    const runs = await db.prisma.run.findMany({ where: { id: { in: ids } } });
    expect(runs.map((r) => r.attempt)).toEqual([1, 1, 1]);
    const running = await db.prisma.auditEvent.findMany({ where: { subjectId: { in: ids }, action: "run.running" } });
    expect(running.map((e) => e.subjectId).sort()).toEqual([...ids].sort());
    const row = (id: string) => runs.find((r) => r.id === id)!;
    // The waiting agent's run started on the first executor while the second was still busy, and the
    // deferred run only once a slot was given back.
    expect(row(patient.runId).startedAt!.getTime()).toBeLessThan(row(holding.runId).finishedAt!.getTime());
    expect(row(deferred.runId).startedAt!.getTime()).toBeGreaterThanOrEqual(
      Math.min(row(holding.runId).finishedAt!.getTime(), row(patient.runId).finishedAt!.getTime()),
    );
    await expect.poll(() => db.prisma.runSlot.count(), { timeout: 5_000, interval: 50 }).toBe(0);
  }, 60_000);
});

describe("the decision is made in PostgreSQL, once for the cluster", () => {
  let db: TestDatabase;
  let runtime: Runtime;

  beforeAll(async () => {
    db = await setUp();
    runtime = await startRuntime(db, false);
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await db?.drop();
  });

  it("intake's slot is taken by the decision itself and stands only with its run: a transaction that stores no run commits no slot", async () => {
    const agent = await makeAgent(db, "slotted");
    const executor = { id: randomUUID(), name: "intake-slot", slots: 1 };
    await registerExecutor(db.prisma, executor);
    const orphan = randomUUID();
    await expect(db.prisma.$transaction((tx) => takeSlotAtIntake(tx, executor.id, { id: orphan, agentId: agent.id }, async (held) => held))).rejects.toThrow(
      /ForeignKeyConstraintViolation|RunSlot_runId_fkey|foreign key/,
    );
    expect(await db.prisma.runSlot.count({ where: { runId: orphan } })).toBe(0);

    const runId = randomUUID();
    const taken = await db.prisma.$transaction((tx) =>
      takeSlotAtIntake(tx, executor.id, { id: runId, agentId: agent.id }, async (held) => {
        // The slot is there before the run is: taken by the decision's own statement.
        expect(await tx.runSlot.findUnique({ where: { runId } })).toMatchObject({ executorId: executor.id });
        await tx.run.create({
          data: {
            id: runId,
            agentId: agent.id,
            status: "queued",
            language: "javascript",
            code: "return 1;",
            codeSha256: "s",
            purpose: "slot",
            inputsDigest: "x",
            requestDigest: "r",
          },
        });
        return held;
      }),
    );
    expect(taken).toMatchObject({ stored: true, slot: { outcome: "held" } });
    expect(await db.prisma.runSlot.findUnique({ where: { runId } })).toMatchObject({ executorId: executor.id });
    // Left queued, the run would wait for a slot and change the next test's decisions.
    await db.prisma.run.delete({ where: { id: runId } });
    await db.prisma.executor.deleteMany({ where: { id: executor.id } });
  });

  it("four executors taking slots for one agent at the same instant give it its share (2 of 4 slots) while another agent waits, not more", async () => {
    const deps = { ...runtime, startExecution: () => {} };
    const greedy = await makeAgent(db, "greedy");
    const patient = await makeAgent(db, "patient");
    const greedyRuns = [];
    for (let n = 0; n < 4; n++) greedyRuns.push((await submitRun(deps, greedy, { code: `return ${n};`, purpose: `g${n}`, language: "javascript" })).runId);
    const patientRun = (await submitRun(deps, patient, { code: `return "p";`, purpose: "p", language: "javascript" })).runId;
    const executor = { id: randomUUID(), name: "four-slots", slots: 4 };
    await registerExecutor(db.prisma, executor);

    // Each "executor" decides on its own connection, all at once.
    const clients = greedyRuns.map(() => createPrismaClient(db.url));
    try {
      await Promise.all(clients.map((client) => client.$queryRaw`SELECT 1`));
      const outcomes = await Promise.all(greedyRuns.map((runId, i) => takeSlot(clients[i]!, executor.id, runId)));
      expect(outcomes.filter((o) => o.outcome === "held")).toHaveLength(2);
      expect(outcomes.filter((o) => o.outcome === "deferred")).toHaveLength(2);
    } finally {
      await Promise.all(clients.map((client) => client.$disconnect()));
    }
    const waiting = (await db.prisma.runSlot.findMany({ where: { executorId: null }, orderBy: [{ since: "asc" }, { runId: "asc" }] })).map((s) => s.runId);
    expect(waiting).toHaveLength(2);
    // Deferred runs stay queued with their attempt untouched.
    expect(await db.prisma.run.findMany({ where: { id: { in: waiting } }, select: { status: true, attempt: true } })).toEqual([
      { status: "queued", attempt: 1 },
      { status: "queued", attempt: 1 },
    ]);

    // The waiting agent gets a slot at once, and that wakes the deferred runs.
    const taken = await takeSlot(db.prisma, executor.id, patientRun);
    expect(taken).toEqual({ outcome: "held", wake: waiting });
    // Nobody else waits now, so a free slot goes to the greedy agent after all.
    expect(await takeSlot(db.prisma, executor.id, waiting[0]!)).toMatchObject({ outcome: "held" });
    // A duplicate job for a run whose slot is held finds nothing to do.
    expect(await takeSlot(db.prisma, executor.id, waiting[0]!)).toEqual({ outcome: "gone" });
    expect(await releaseSlot(db.prisma, executor.id, patientRun)).toEqual([waiting[1]]);
    expect(await db.prisma.auditEvent.count({ where: { action: "run.deferred" } })).toBe(2);
  });
});

describe("one executor, one slot: a run started at once", () => {
  let db: TestDatabase;
  let runtime: Runtime;

  beforeAll(async () => {
    db = await setUp();
    runtime = await startRuntime(db, true);
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await db?.drop();
  });

  const jobsFor = async (runId: string) =>
    Number((await db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM graphile_worker._private_jobs WHERE key = ${`run:${runId}`}`)[0]!.n);

  it("takes the idle slot without a job; runs approved while it is busy wait as jobs, one at a time, each executed once", async () => {
    const agent = await makeAgent(db, "fast");
    const busy = (n: number) => ({
      code: `const end = Date.now() + 1200; while (Date.now() < end) {} return ${n};`,
      purpose: `busy ${n}`,
      language: "javascript" as const,
    });
    const first = await submitRun(runtime, agent, busy(1));
    await expect
      .poll(async () => (await db.prisma.run.findUniqueOrThrow({ where: { id: first.runId } })).status, { timeout: 10_000, interval: 20 })
      .toBe("running");
    // Started at once: no job was ever added for it.
    expect(await jobsFor(first.runId)).toBe(0);
    const later = [await submitRun(runtime, agent, busy(2)), await submitRun(runtime, agent, busy(3))];
    // The slot is taken, so these went through the queue.
    for (const view of later) await expect.poll(() => jobsFor(view.runId), { timeout: 1_000, interval: 10 }).toBe(1);
    const ids = [first.runId, ...later.map((v) => v.runId)];
    let most = 0;
    for (;;) {
      const runs = await db.prisma.run.findMany({ where: { id: { in: ids } }, select: { status: true } });
      most = Math.max(most, runs.filter((r) => r.status === "running").length);
      if (runs.every((r) => r.status === "succeeded")) break;
      if (runs.some((r) => !["queued", "running", "succeeded"].includes(r.status))) throw new Error(`a run ended ${JSON.stringify(runs)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(most).toBe(1);
    const events = await db.prisma.auditEvent.findMany({ where: { subjectId: { in: ids }, action: "run.running" } });
    expect(events).toHaveLength(3);
    expect((await db.prisma.run.findMany({ where: { id: { in: ids } } })).map((r) => r.attempt)).toEqual([1, 1, 1]);
  }, 60_000);

  it("a submission on an executor another process pruned (its heartbeat stalled) is stored queued and executed once, not refused", async () => {
    const agent = await makeAgent(db, "pruned");
    // What another process's sweep does to an executor silent for EXECUTOR_LIVE_MS; its next heartbeat registers it again.
    await db.prisma.executor.deleteMany({});
    const view = await submitRun(runtime, agent, { code: `return 5;`, purpose: "after a prune", language: "javascript" });
    expect(view.status).toBe("queued");
    await expect
      .poll(async () => (await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } })).status, { timeout: 40_000, interval: 100 })
      .toBe("succeeded");
    expect(await db.prisma.auditEvent.count({ where: { subjectId: view.runId, action: "run.running" } })).toBe(1);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } })).attempt).toBe(1);
  }, 60_000);
});
