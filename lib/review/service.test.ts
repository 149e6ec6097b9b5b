/**
 * Review decisions on real parts: PostgreSQL, the shipped policies (writes to regulated data need
 * two approvals), the demo ledger over stdio and the strict sandbox for approved runs.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import { submitRun } from "@/lib/intake/submit";
import { getRun, type AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { notifyEscalation } from "@/lib/runs/notify";
import { expireReviews } from "@/lib/runs/expiry";
import type { DecisionBinding } from "./run-dto";
import { decideRun, reviewBinding, type ReviewDeps } from "./service";

type User = Extract<Actor, { type: "user" }>;
const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
let owner: User;
let alice: User;
let bob: User;
let carol: User;
let compliance: User;
let started: string[];
let deps: ReviewDeps;
let nonce = 0;

async function user(email: string, role: User["role"]): Promise<User> {
  const created = await db.prisma.$transaction((tx) => createUser(tx, system, { email, role }));
  return { type: "user", id: created.id, email, role };
}

/** A fresh pending run (two approvals: it emails a customer, pii + open world), submitted by the agent or by a person for it (`exec --as`). */
async function pendingRun(by?: User): Promise<{
  runId: string;
  seen: DecisionBinding;
}> {
  nonce++;
  const view = await submitRun(
    runtime,
    agent,
    {
      code: `// attempt ${nonce}\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "Please pay" });\nreturn "sent";`,
      purpose: `Remind a customer (${nonce})`,
      provenance: { model: "test-model", conversationId: "conv-1" },
    },
    by ? { via: { door: "cli:exec", by } } : {},
  );
  // A write is previewed first; the wait ends when its plan is ready for reviewers.
  expect(view).toMatchObject({ status: "previewing", approvalsRequired: 2 });
  expect(await getRun(runtime, agent, { runId: view.runId, waitSeconds: 30 })).toMatchObject({
    status: "pending_review",
    plan: [{ tool: "sendReminderEmail" }],
  });
  const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
  return {
    runId: run.id,
    seen: reviewBinding(run),
  };
}

async function actions(runId: string): Promise<string[]> {
  return (await db.prisma.auditEvent.findMany({ where: { subjectType: "run", subjectId: runId }, orderBy: { id: "asc" } })).map((e) => e.action);
}

beforeAll(async () => {
  setEnvForChildren({ AIRLOCK_LOOP_BREAKER_FAILURES: "100", AIRLOCK_BUDGET_CONCURRENT_RUNS: "50", AIRLOCK_BUDGET_RUNS_PER_HOUR: "1000" });
  db = await createTestDatabase();
  owner = await user("owner@example.com", "reviewer");
  alice = await user("alice@example.com", "reviewer");
  bob = await user("bob@example.com", "reviewer");
  carol = await user("carol@example.com", "reviewer");
  compliance = await user("compliance@example.com", "compliance");
  await db.prisma.$transaction((tx) => publishPolicyText(tx, system, defaultPolicyText()));
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "mailer", ownerEmail: owner.email }));
  agent = { type: "agent", id: created.agentId, name: "mailer", ownerId: owner.id, scopes: created.scopes };
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  runtime = await createRuntime(db.prisma, { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } }, { databaseUrl: db.url, execute: true });
  started = [];
  deps = {
    db: db.prisma,
    startExecution: (runId) => {
      started.push(runId);
      runtime.startExecution(runId);
    },
  };
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("decideRun", () => {
  it("needs two distinct people for a quorum of two, then runs the script once", async () => {
    const { runId, seen } = await pendingRun();
    const first = await decideRun(deps, alice, { runId, verdict: "approve", seen });
    expect(first).toMatchObject({ status: "pending_review", approvals: { received: 1, required: 2, by: [alice.email] } });
    await expect(decideRun(deps, alice, { runId, verdict: "approve", seen })).rejects.toMatchObject({ code: "conflict", details: { reason: "already_voted" } });
    expect((await getRun(runtime, agent, { runId })).approvals).toEqual({ approvedBy: [alice.email], required: 2 });

    const second = await decideRun(deps, bob, { runId, verdict: "approve", seen });
    expect(second).toMatchObject({ status: "queued", approvals: { received: 2, required: 2, by: [alice.email, bob.email] } });
    expect(started.filter((id) => id === runId)).toHaveLength(1);
    const done = await getRun(runtime, agent, { runId, waitSeconds: 60 });
    expect(done.status).toBe("succeeded");
    expect(done.result).toBe("sent");
    expect(await actions(runId)).toEqual([
      "run.submitted",
      "run.analyzed",
      "run.previewing",
      "run.pending_review",
      "run.reviewed",
      "run.reviewed",
      "run.approved",
      "run.queued",
      "run.running",
      "run.succeeded",
    ]);
    await expect(decideRun(deps, carol, { runId, verdict: "approve", seen })).rejects.toMatchObject({ code: "conflict", details: { status: "succeeded" } });
  }, 90_000);

  it("refuses the person who submitted the run for the agent (exec --as): they cannot approve their own script", async () => {
    const { runId, seen } = await pendingRun(carol);
    await expect(decideRun(deps, carol, { runId, verdict: "approve", seen })).rejects.toMatchObject({
      code: "forbidden",
      details: { reason: "own_submission" },
    });
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
  });

  it("refuses the owner of the agent (separation of duties), other roles and agents", async () => {
    const { runId, seen } = await pendingRun();
    await expect(decideRun(deps, owner, { runId, verdict: "approve", seen })).rejects.toMatchObject({ code: "forbidden", details: { reason: "own_agent" } });
    await expect(decideRun(deps, compliance, { runId, verdict: "approve", seen })).rejects.toMatchObject({
      code: "forbidden",
      details: { scope: "runs:review" },
    });
    await expect(decideRun(deps, agent, { runId, verdict: "approve", seen })).rejects.toMatchObject({ code: "forbidden" });
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("pending_review");
  });

  it("refuses an approval bound to facts that differ from the run, naming what changed", async () => {
    const { runId, seen } = await pendingRun();
    await expect(decideRun(deps, alice, { runId, verdict: "approve", seen: { ...seen, codeSha256: "0".repeat(64) } })).rejects.toMatchObject({
      code: "conflict",
      details: { changed: ["codeSha256"] },
    });
    await expect(
      decideRun(deps, alice, {
        runId,
        verdict: "approve",
        seen: { ...seen, capabilitySet: ["ledger.listInvoices"], policyVersionId: "00000000-0000-4000-8000-000000000000" },
      }),
    ).rejects.toMatchObject({ code: "conflict", details: { changed: ["capabilitySet", "policyVersionId"] } });
    await expect(decideRun(deps, alice, { runId, verdict: "approve", seen: { ...seen, inputsDigest: "f".repeat(64) } })).rejects.toMatchObject({
      details: { changed: ["inputsDigest"] },
    });
    // The order of the capability set does not matter; its members do.
    expect(await decideRun(deps, alice, { runId, verdict: "approve", seen: { ...seen, capabilitySet: [...seen.capabilitySet].reverse() } })).toMatchObject({
      status: "pending_review",
    });
  });

  it("requires a comment to reject or request changes, and refuses malformed input", async () => {
    const { runId, seen } = await pendingRun();
    await expect(decideRun(deps, alice, { runId, verdict: "reject", seen })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("comment is required"),
    });
    await expect(decideRun(deps, alice, { runId, verdict: "request_changes", comment: "   ", seen })).rejects.toMatchObject({ code: "bad_request" });
    await expect(decideRun(deps, alice, { runId, verdict: "approve", seen, extra: true })).rejects.toMatchObject({ code: "bad_request" });
    await expect(decideRun(deps, alice, { runId, verdict: "yolo", seen })).rejects.toMatchObject({ code: "bad_request" });
    await expect(decideRun(deps, alice, { runId: "not-a-run", verdict: "approve", seen })).rejects.toMatchObject({ code: "bad_request" });
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
  });

  it("delivers a rejection comment to the agent through get_run", async () => {
    const { runId, seen } = await pendingRun();
    const comment = "Do not email customers from a script; open a ticket instead.";
    expect(await decideRun(deps, alice, { runId, verdict: "reject", comment, seen })).toMatchObject({ status: "rejected" });
    const view = await getRun(runtime, agent, { runId });
    expect(view.status).toBe("rejected");
    expect(view.error?.code).toBe("REVIEW_REJECTED");
    expect(view.comments).toEqual([expect.objectContaining({ verdict: "reject", comment })]);
    await expect(decideRun(deps, bob, { runId, verdict: "approve", seen })).rejects.toMatchObject({ code: "conflict" });
    expect((await actions(runId)).slice(-2)).toEqual(["run.reviewed", "run.rejected"]);
  });

  it("request changes is terminal and tells the agent", async () => {
    const { runId, seen } = await pendingRun();
    await decideRun(deps, bob, { runId, verdict: "approve", seen });
    expect(await decideRun(deps, alice, { runId, verdict: "request_changes", comment: "Use invoice inv_0002.", seen })).toMatchObject({
      status: "changes_requested",
    });
    const view = await getRun(runtime, agent, { runId });
    expect(view).toMatchObject({ status: "changes_requested", error: { code: "CHANGES_REQUESTED" } });
    expect(view.comments.map((c) => c.comment)).toEqual(["Use invoice inv_0002."]);
  });

  it("two simultaneous final approvals queue and execute the run exactly once", async () => {
    const { runId, seen } = await pendingRun();
    await decideRun(deps, alice, { runId, verdict: "approve", seen });
    const before = started.length;
    const outcomes = await Promise.allSettled([
      decideRun(deps, bob, { runId, verdict: "approve", seen }),
      decideRun(deps, carol, { runId, verdict: "approve", seen }),
    ]);
    const fulfilled = outcomes.filter((o) => o.status === "fulfilled");
    const rejected = outcomes.filter((o) => o.status === "rejected");
    expect(fulfilled).toHaveLength(1);
    expect(fulfilled[0]!.value).toMatchObject({ status: "queued" });
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.reason).toMatchObject({ code: "conflict" });
    expect(started.length - before).toBe(1);

    expect((await getRun(runtime, agent, { runId, waitSeconds: 60 })).status).toBe("succeeded");
    const log = await actions(runId);
    expect(log.filter((a) => a === "run.queued")).toHaveLength(1);
    expect(log.filter((a) => a === "run.running")).toHaveLength(1);
    expect(log.filter((a) => a === "run.reviewed")).toHaveLength(2);
    expect(await db.prisma.review.count({ where: { runId } })).toBe(2);
  }, 90_000);
});

describe("expireReviews", () => {
  it("expires pending runs past their deadline once, audited and visible to the agent", async () => {
    const due = await pendingRun();
    const fresh = await pendingRun();
    await db.prisma.run.update({ where: { id: due.runId }, data: { reviewExpiresAt: new Date(Date.now() - 60_000) } });
    await expect(decideRun(deps, alice, { runId: due.runId, verdict: "approve", seen: due.seen })).rejects.toMatchObject({
      code: "conflict",
      details: { status: "expired" },
    });

    const expired = await expireReviews(db.prisma, new Date());
    expect(expired).toContain(due.runId);
    expect(expired).not.toContain(fresh.runId);
    expect(await expireReviews(db.prisma, new Date())).not.toContain(due.runId);
    const view = await getRun(runtime, agent, { runId: due.runId });
    expect(view).toMatchObject({ status: "expired", error: { code: "REVIEW_EXPIRED" } });
    expect((await actions(due.runId)).filter((a) => a === "run.expired")).toHaveLength(1);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: fresh.runId } })).status).toBe("pending_review");
  });
});

describe("review webhook", () => {
  let server: Server;
  let received: { body: string }[];
  let status = 200;

  beforeAll(async () => {
    received = [];
    server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        received.push({ body });
        res.statusCode = status;
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    setEnvForChildren({ AIRLOCK_REVIEW_WEBHOOK_URL: `http://127.0.0.1:${port}/hook`, AIRLOCK_PUBLIC_URL: "https://airlock.example.com" });
  });
  afterAll(async () => {
    setEnvForChildren({ AIRLOCK_REVIEW_WEBHOOK_URL: "", AIRLOCK_PUBLIC_URL: "" });
    await new Promise((resolve) => server.close(resolve));
  });

  it("posts a link and a summary on escalation and on decision, never the code", async () => {
    const { runId, seen } = await pendingRun();
    // submit_run announces the escalation itself, in the background.
    await expect.poll(() => received.length, { timeout: 5_000 }).toBe(1);
    const message = JSON.parse(received[0]!.body) as { text: string; blocks: unknown[] };
    expect(message.text).toContain(`https://airlock.example.com/runs/${runId}`);
    expect(message.text).toContain("mailer");
    expect(JSON.stringify(message)).toContain("0/2 approvals");
    expect(JSON.stringify(message)).not.toContain("sendReminderEmail");

    await decideRun(deps, alice, { runId, verdict: "reject", comment: "secret reasoning stays in Airlock", seen });
    await expect.poll(() => received.length).toBe(2);
    expect(received[1]!.body).toContain("rejected");
    expect(received[1]!.body).not.toContain("secret reasoning");
  });

  it("a failing webhook never breaks the decision", async () => {
    status = 500;
    const { runId, seen } = await pendingRun();
    await expect(notifyEscalation(runId, db.prisma)).resolves.toBeUndefined();
    expect(await decideRun(deps, alice, { runId, verdict: "reject", comment: "no", seen })).toMatchObject({ status: "rejected" });
  });
});
