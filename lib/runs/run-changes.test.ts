/**
 * Pushed run changes on a real PostgreSQL: a wait ends when a run's status changes in another
 * connection, long before its own bound; a killed listening connection neither loses a change nor
 * leaves waits hanging; a forged notification only makes the caller read again; a row the
 * process's own executor hands over ends a wait with that row, unless it is another agent's or
 * still in progress.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AGENT_SCOPES, type Actor } from "@/lib/contracts/scopes";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent } from "@/lib/testing/run-rows";
import { CHANNEL, listenRunChanges, type RunChanges } from "./run-changes";
import { getRun, type AgentActor } from "./service";
import { transitionRun } from "./states";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let agent: AgentActor;
let changes: RunChanges;

async function queuedRun(): Promise<string> {
  const run = await db.prisma.run.create({
    data: {
      agentId: agent.id,
      status: "queued",
      language: "javascript",
      code: "return 1;",
      codeSha256: "x",
      purpose: "changes test",
      inputsDigest: "x",
      requestDigest: "x",
    },
  });
  return run.id;
}

const move = (runId: string, from: "queued" | "running", to: "running" | "failed") =>
  db.prisma.$transaction((tx) => transitionRun(tx, system, { runId, from, to, audit: {} }));

/** Resolves once the listener is up: a change made now is pushed (a wait ends well before its bound). */
async function listening(): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const rows = await db.prisma.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'airlock-run-changes' AND query ILIKE 'LISTEN%'`;
    if (Number(rows[0]!.n) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the listener never came up");
}

beforeAll(async () => {
  let agentId: string;
  ({ db, agentId } = await databaseWithAgent("changes"));
  agent = { type: "agent", id: agentId, name: "changes", ownerId: "", scopes: DEFAULT_AGENT_SCOPES };
  changes = listenRunChanges(db.url);
  await listening();
}, 60_000);

afterAll(async () => {
  await changes?.close();
  await db?.drop();
});

describe("pushed run changes", () => {
  it("a wait armed before a change ends when the change commits, not at its 5 s bound", async () => {
    const runId = await queuedRun();
    const armed = changes.arm(runId);
    const started = performance.now();
    setTimeout(() => void move(runId, "queued", "running"), 50);
    await armed.wait(5_000);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("running");
  });

  it("a run id written in upper case is woken too (PostgreSQL announces it in lower case)", async () => {
    const runId = await queuedRun();
    const armed = changes.arm(runId.toUpperCase());
    const started = performance.now();
    setTimeout(() => void move(runId, "queued", "running"), 50);
    await armed.wait(5_000);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("get_run's wait answers with the run's end as soon as it commits", async () => {
    const runId = await queuedRun();
    await move(runId, "queued", "running");
    const started = performance.now();
    setTimeout(() => void move(runId, "running", "failed"), 100);
    const view = await getRun({ db: db.prisma, changes }, agent, { runId, waitSeconds: 30 });
    expect(view.status).toBe("failed");
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("a change of another run does not end the wait; a forged notification only makes the caller read again", async () => {
    const mine = await queuedRun();
    const other = await queuedRun();
    const armed = changes.arm(mine);
    const started = performance.now();
    setTimeout(() => void move(other, "queued", "running"), 20);
    await armed.wait(600);
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
    // Anyone who can connect can NOTIFY: the wait ends, and get_run reads the run as it is.
    const forged = performance.now();
    setTimeout(() => void db.prisma.$executeRawUnsafe(`NOTIFY ${CHANNEL}, '${mine}'`), 50);
    const view = await getRun({ db: db.prisma, changes }, agent, { runId: mine, waitSeconds: 1 });
    expect(view.status).toBe("queued");
    expect(performance.now() - forged).toBeGreaterThanOrEqual(900);
  });

  it("a row handed over in this process ends the wait with that row: get_run answers with it, without a push or a read", async () => {
    const runId = await queuedRun();
    await move(runId, "queued", "running");
    const row = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const started = performance.now();
    // The stored run stays running: an answer of `failed` can only come from the row handed over.
    setTimeout(() => changes.handOver({ ...row, status: "failed" }), 50);
    const view = await getRun({ db: db.prisma, changes }, agent, { runId, waitSeconds: 30 });
    expect(view.status).toBe("failed");
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("a handed row of another agent's run, or of one still in progress, only makes the caller read again", async () => {
    const runId = await queuedRun();
    await move(runId, "queued", "running");
    const row = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    for (const handed of [
      { ...row, agentId: "00000000-0000-4000-8000-00000000beef", status: "failed" as const },
      { ...row, status: "pending_release" as const },
    ]) {
      const started = performance.now();
      setTimeout(() => changes.handOver(handed), 50);
      const view = await getRun({ db: db.prisma, changes }, agent, { runId, waitSeconds: 1 });
      expect(view.status).toBe("running");
      expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    }
  });

  it("a killed listening connection loses no change: waits poll, and pushes resume once it is back", async () => {
    const runId = await queuedRun();
    await db.prisma.$executeRaw`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'airlock-run-changes'`;
    // While it is down, a change is still seen within a poll.
    const armed = changes.arm(runId);
    await move(runId, "queued", "running");
    const started = performance.now();
    await armed.wait(5_000);
    expect(performance.now() - started).toBeLessThan(2_000);
    await listening();
    const pushed = changes.arm(runId);
    const again = performance.now();
    setTimeout(() => void move(runId, "running", "failed"), 50);
    await pushed.wait(5_000);
    expect(performance.now() - again).toBeLessThan(2_000);
  });

  it("close ends every wait", async () => {
    const own = listenRunChanges(db.url);
    const armed = own.arm(await queuedRun());
    const started = performance.now();
    setTimeout(() => void own.close(), 50);
    await armed.wait(30_000);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
