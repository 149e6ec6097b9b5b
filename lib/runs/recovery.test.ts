/**
 * Lost executors against a real PostgreSQL: a run is retried once and only when nothing with an
 * effect could have happened; a cancel is final; every terminal event seals the calls on record.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolCallsDigest } from "@/lib/audit/seal";
import { verifyAuditChain } from "@/lib/audit/verify";
import { canonicalJson } from "@/lib/canonical-json";
import type { Actor } from "@/lib/contracts/scopes";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { cancelRun } from "./cancel";
import { executeRun } from "./executor";
import { recoverLostRun } from "./recovery";
import { recordStoredRun } from "@/lib/audit/testing";

let db: TestDatabase;
let agentId: string;
const EMPTY_ARGS_DIGEST = createHash("sha256").update(canonicalJson({})).digest("hex");
const longAgo = new Date(Date.now() - 3_600_000);
const cutoff = new Date(Date.now() - 60_000);

async function lostRun(options: { attempt?: number; cancelRequested?: boolean; calls?: { readOnly: boolean; outcome: string }[] } = {}): Promise<string> {
  const runId = await insertRun(db, agentId, {
    status: "running",
    purpose: "lost",
    attempt: options.attempt ?? 1,
    executorId: "gone-1",
    heartbeatAt: longAgo,
    cancelRequestedAt: options.cancelRequested ? longAgo : null,
  });
  await recordStoredRun(db.prisma, { id: runId, status: "running", codeSha256: "x" });
  for (const [i, call] of (options.calls ?? []).entries()) {
    await db.prisma.runToolCall.create({
      data: {
        runId,
        seq: i + 1,
        server: "ledger",
        tool: call.readOnly ? "listRefunds" : "issueRefund",
        args: {},
        argsDigest: EMPTY_ARGS_DIGEST,
        durationMs: 0,
        readOnly: call.readOnly,
        outcome: call.outcome,
      },
    });
  }
  return runId;
}

const events = (runId: string) => db.prisma.auditEvent.findMany({ where: { subjectId: runId }, orderBy: { id: "asc" } });

beforeAll(async () => {
  ({ db, agentId } = await databaseWithAgent("lost"));
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe("recoverLostRun", () => {
  it("requeues a run that made only read-only calls, once, as attempt 2", async () => {
    const runId = await lostRun({ calls: [{ readOnly: true, outcome: "ok" }] });
    expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("requeued");
    expect(await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ status: "queued", attempt: 2, executorId: null });
    expect((await events(runId)).at(-1)).toMatchObject({ action: "run.requeued", data: { attempt: 2, reason: "EXECUTOR_LOST" } });
  });

  it("never requeues a second time", async () => {
    const runId = await lostRun({ attempt: 2 });
    expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("failed");
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run).toMatchObject({ status: "failed", error: { code: "EXECUTOR_LOST" } });
    expect((run.error as { message: string }).message).toMatch(/already retried once/);
  });

  it("fails a run with a started (or completed) call to a tool that is not read-only, sealing it", async () => {
    for (const outcome of ["started", "ok"]) {
      const runId = await lostRun({
        calls: [
          { readOnly: true, outcome: "ok" },
          { readOnly: false, outcome },
        ],
      });
      expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("failed");
      const terminal = (await events(runId)).at(-1)!;
      expect(terminal).toMatchObject({ action: "run.failed", data: { reason: "EXECUTOR_LOST", effectfulCalls: 1, toolCalls: 2 } });
      const calls = await db.prisma.runToolCall.findMany({ where: { runId }, orderBy: { seq: "asc" } });
      expect((terminal.data as { toolCallsDigest: string }).toolCallsDigest).toBe(toolCallsDigest(calls));
    }
  });

  it("ends a run whose cancel was requested as cancelled, even when a retry would be safe", async () => {
    const runId = await lostRun({ cancelRequested: true });
    expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("cancelled");
    expect(await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ status: "cancelled", error: { code: "CANCELLED" } });
  });

  it("leaves a run alone that heartbeated after the cutoff or is no longer running", async () => {
    const runId = await lostRun();
    await db.prisma.run.update({ where: { id: runId }, data: { heartbeatAt: new Date() } });
    expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("gone");
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("running");
  });

  it("a requeued run cancelled before it starts is cancelled for good, sealing the first attempt's calls", async () => {
    const runId = await lostRun({ calls: [{ readOnly: true, outcome: "ok" }] });
    expect(await recoverLostRun(db.prisma, runId, cutoff, new Date())).toBe("requeued");
    const reviewer: Actor = { type: "user", id: (await db.prisma.user.findFirstOrThrow()).id, email: "owner@example.com", role: "reviewer" };
    expect(await cancelRun({ db: db.prisma }, reviewer, runId)).toEqual({ runId, status: "cancelled" });
    const executed = await executeRun(
      {
        db: db.prisma,
        executorId: "late",
        isolation: "strict",
        tool: () => undefined,
        runScript: () => Promise.reject(new Error("must not run")),
        callTool: () => Promise.reject(new Error("must not call")),
      },
      runId,
    );
    expect(executed).toBe(false);
    expect((await events(runId)).at(-1)).toMatchObject({ action: "run.cancelled", data: { toolCalls: 1 } });
    expect((await verifyAuditChain(db.prisma, { checkpoints: null })).broken).toBeNull();
  });
});

describe("an executor below the decided isolation", () => {
  it("does not run a run decided at strict: it fails SANDBOX_UNAVAILABLE, and the sandbox is never asked", async () => {
    const proposal = { uid: { type: "Proposal", id: "submitted" }, attrs: { isolation: "strict" }, parents: [] };
    const request = {
      schemaVersion: 2,
      principal: { type: "Agent", id: "a" },
      action: { type: "Action", id: "run" },
      resource: { type: "Proposal", id: "submitted" },
      context: {},
      entities: [proposal],
    };
    const run = await db.prisma.run.create({
      data: {
        agentId,
        status: "queued",
        language: "javascript",
        code: "return 1;",
        codeSha256: "x",
        purpose: "strict only",
        inputsDigest: "x",
        requestDigest: "x",
        policyRequest: request,
      },
    });
    await recordStoredRun(db.prisma, run);
    let asked = false;
    const executed = await executeRun(
      {
        db: db.prisma,
        executorId: "degraded",
        tool: () => undefined,
        isolation: "permission-only",
        runScript: () => {
          asked = true;
          return Promise.reject(new Error("must not run"));
        },
        callTool: () => Promise.reject(new Error("must not call")),
      },
      run.id,
    );
    expect(executed).toBe(true);
    expect(asked).toBe(false);
    const ended = await db.prisma.run.findUniqueOrThrow({ where: { id: run.id } });
    expect(ended).toMatchObject({ status: "failed", error: { code: "SANDBOX_UNAVAILABLE" } });
    expect((ended.error as { message: string }).message).toContain("decided for strict isolation, and this executor runs at permission-only");
  });
});
