/**
 * submit_run under parallel attack, on real parts (PostgreSQL, the demo ledger over stdio, the
 * broker, analysis, the shipped policies): every submission of a burst goes through submitRun on
 * its own database connection, at once. Idempotency keys, the cap on runs waiting for review and
 * the CPU-seconds budget must hold as they do for one submission at a time. Nothing executes or is
 * enqueued here: queued runs stay queued, so they are runs in flight.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import { env, setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { cancelRun } from "@/lib/runs/cancel";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor, RunView } from "@/lib/runs/service";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { submitRun } from "./submit";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
/** The runtime's registry and database, without handing queued runs to an executor. */
const deps = (client?: PrismaClient) => ({ ...runtime, db: client ?? db.prisma, startExecution: () => {} });
const clients: PrismaClient[] = [];

async function makeAgent(name: string): Promise<AgentActor> {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com" }));
  const ownerId = (await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } })).ownerId;
  return { type: "agent", id: created.agentId, name, ownerId, scopes: created.scopes };
}

/** Submits every body at once, each through its own client (its own connection). */
async function burst(agent: AgentActor, bodies: unknown[]): Promise<PromiseSettledResult<RunView>[]> {
  while (clients.length < bodies.length) clients.push(createPrismaClient(db.url));
  return Promise.all(
    bodies.map((body, i) =>
      submitRun(deps(clients[i]), agent, body).then(
        (value) => ({ status: "fulfilled" as const, value }),
        (reason: unknown) => ({ status: "rejected" as const, reason }),
      ),
    ),
  );
}

const fulfilled = (results: PromiseSettledResult<RunView>[]) => results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
const rejected = (results: PromiseSettledResult<RunView>[]) => results.flatMap((r) => (r.status === "rejected" ? [r.reason as Record<string, unknown>] : []));

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  runtime = await createRuntime(
    db.prisma,
    { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } },
    { databaseUrl: db.url, execute: false },
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.$disconnect()));
  await runtime?.close();
  await db?.drop();
});

describe("idempotency keys in a race", () => {
  it("10 parallel submissions with one key and different code: one run, nine conflicts, nobody gets another's run", async () => {
    const agent = await makeAgent("racer");
    const bodies = Array.from({ length: 10 }, (_, n) => ({ code: `return ${n};`, purpose: "race", language: "javascript", idempotencyKey: "race-1" }));
    const results = await burst(agent, bodies);
    const winners = fulfilled(results);
    expect(winners).toHaveLength(1);
    const winnerIndex = results.findIndex((r) => r.status === "fulfilled");
    const stored = await db.prisma.run.findMany({ where: { agentId: agent.id } });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ id: winners[0]!.runId, code: bodies[winnerIndex]!.code });
    expect(rejected(results)).toHaveLength(9);
    for (const error of rejected(results)) expect(error).toMatchObject({ code: "conflict" });
    const refused = await db.prisma.auditEvent.findMany({ where: { action: "run.refused", subjectId: agent.id } });
    expect(refused.map((e) => (e.data as { reason: string }).reason)).toEqual(Array(9).fill("conflict"));
  });

  it("10 parallel submissions of the same body with one key all get the same run", async () => {
    const agent = await makeAgent("retrier");
    const body = { code: `return "same";`, purpose: "retry", language: "javascript", idempotencyKey: "retry-1" };
    const results = await burst(agent, Array(10).fill(body));
    const views = fulfilled(results);
    expect(views).toHaveLength(10);
    expect(new Set(views.map((v) => v.runId)).size).toBe(1);
    expect(await db.prisma.run.count({ where: { agentId: agent.id } })).toBe(1);
  });
});

describe("budgets in a race", () => {
  it("12 parallel state-changing submissions leave exactly AIRLOCK_BUDGET_PENDING_REVIEWS (10) waiting for review", async () => {
    expect(env().AIRLOCK_BUDGET_PENDING_REVIEWS).toBe(10);
    const agent = await makeAgent("escalator");
    const bodies = Array.from({ length: 12 }, (_, n) => ({
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_${String(n + 1).padStart(4, "0")}", message: "pay" });`,
      purpose: `remind ${n}`,
    }));
    const results = await burst(agent, bodies);
    expect(fulfilled(results).map((v) => v.status)).toEqual(Array(10).fill("previewing"));
    expect(rejected(results)).toHaveLength(2);
    for (const error of rejected(results)) expect(error).toMatchObject({ runCode: "BUDGET_EXCEEDED", message: expect.stringContaining("waiting for review") });
    expect(await db.prisma.run.count({ where: { agentId: agent.id, status: { in: ["previewing", "pending_review"] } } })).toBe(10);
    // The cap is on runs waiting for review: a run that needs no review is still accepted.
    const read = await submitRun(deps(), agent, { code: `return 1;`, purpose: "read", language: "javascript" });
    expect(read.status).toBe("queued");
  });

  it("runs in flight reserve their CPU limit against the daily CPU-seconds budget, also in a race", async () => {
    const budget = 2 * RUN_LIMIT_DEFAULTS.cpuSeconds + RUN_LIMIT_DEFAULTS.cpuSeconds / 2;
    setEnvForChildren({ AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: String(budget) });
    try {
      const agent = await makeAgent("spinner");
      const spin = (n: number) => ({ code: `while (true) {} // ${n}`, purpose: `spin ${n}`, language: "javascript" });
      const results = await burst(agent, [spin(1), spin(2), spin(3), spin(4)]);
      // Two runs' CPU limits fit in the budget, a third does not, though none has used any CPU yet.
      expect(fulfilled(results).map((v) => v.status)).toEqual(["queued", "queued"]);
      expect(rejected(results)).toHaveLength(2);
      for (const error of rejected(results)) expect(error).toMatchObject({ runCode: "BUDGET_EXCEEDED", message: expect.stringContaining("not finished yet") });
      expect(await db.prisma.run.count({ where: { agentId: agent.id } })).toBe(2);
      // A run that ends gives back what it did not use.
      await cancelRun(runtime, agent, fulfilled(results)[0]!.runId);
      expect(await submitRun(deps(), agent, spin(5))).toMatchObject({ status: "queued" });
    } finally {
      setEnvForChildren({ AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: String(3600) });
    }
  });
});

describe("the budget lock", () => {
  it("attack: a submission waits for another holding the agent's budget lock, then counts the runs it committed", async () => {
    expect(env().AIRLOCK_BUDGET_CONCURRENT_RUNS).toBe(4);
    const agent = await makeAgent("locked-out");
    const holder = createPrismaClient(db.url);
    clients.push(holder);
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let locked!: () => void;
    const lockHeld = new Promise<void>((resolve) => (locked = resolve));
    // Another submission's transaction: the agent's budget lock, then four runs in flight, committed later.
    const other = holder.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`budget:${agent.id}`}))`;
        for (let n = 0; n < 4; n++) {
          await tx.run.create({
            data: {
              agentId: agent.id,
              status: "queued",
              language: "javascript",
              code: `return ${n};`,
              codeSha256: `c${n}`,
              purpose: "held",
              inputsDigest: "x",
              requestDigest: `r${n}`,
            },
          });
        }
        locked();
        await committing;
      },
      { timeout: 20_000 },
    );
    await lockHeld;
    let settled = false;
    const submission = submitRun(deps(), agent, { code: "return 1;", purpose: "after the lock", language: "javascript" }).finally(() => (settled = true));
    submission.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Its checks before the transaction saw no run in flight; it waits for the lock, not past it.
    expect(settled).toBe(false);
    commit();
    await other;
    // The figures are read once the lock is held: the four runs committed meanwhile count.
    await expect(submission).rejects.toMatchObject({ runCode: "BUDGET_EXCEEDED", message: expect.stringContaining("4 runs queued or running") });
    expect(await db.prisma.run.count({ where: { agentId: agent.id } })).toBe(4);
  });
});

describe("the reads before the decision, made at once", () => {
  it("refuse as they would one by one: budgets first, then the scope to read inputs, then unknown inputs", async () => {
    const body = { code: `return inputs.list();`, purpose: "reads an input", language: "javascript", inputs: ["no-such-dataset"] };
    const agent = await makeAgent("orderly");
    const withoutInputs: AgentActor = { ...agent, scopes: agent.scopes.filter((scope) => scope !== "inputs:read") };
    setEnvForChildren({ AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: String(RUN_LIMIT_DEFAULTS.cpuSeconds / 2) });
    try {
      await expect(submitRun(deps(), withoutInputs, body)).rejects.toMatchObject({ runCode: "BUDGET_EXCEEDED" });
    } finally {
      setEnvForChildren({ AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: String(3600) });
    }
    await expect(submitRun(deps(), withoutInputs, body)).rejects.toMatchObject({ code: "forbidden", details: { scope: "inputs:read" } });
    await expect(submitRun(deps(), agent, body)).rejects.toMatchObject({ code: "bad_request", message: expect.stringContaining("Unknown input") });
    expect(await db.prisma.run.count({ where: { agentId: agent.id } })).toBe(0);
  });
});
