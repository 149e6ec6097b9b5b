/**
 * The run lifecycle end to end on real parts: PostgreSQL, the demo ledger MCP server over stdio,
 * the broker, analysis, the shipped Cedar policies and the sandbox (strict isolation).
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { replayDraft } from "@/lib/policy/replay";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { insertRun } from "@/lib/testing/run-rows";
import { loadDashboard } from "./dashboard";
import { createDataset } from "./datasets";
import { createRuntime, demoConfig, type Runtime } from "./runtime";
import { cancelRun, revokeAgentAndStopRuns } from "./cancel";
import { submitRun } from "@/lib/intake/submit";
import { getRun, type AgentActor } from "./service";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
let otherAgent: AgentActor;

async function makeAgent(name: string): Promise<AgentActor> {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com" }));
  return {
    type: "agent",
    id: created.agentId,
    name,
    ownerId: (await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } })).ownerId,
    scopes: created.scopes,
  };
}

beforeAll(async () => {
  setEnvForChildren({ AIRLOCK_LOOP_BREAKER_FAILURES: "3", AIRLOCK_BUDGET_CONCURRENT_RUNS: "50" });
  db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
    await createDataset(tx, system, { name: "rates.csv", dataClass: "public", mediaType: "text/csv", content: "currency,rate\nEUR,1.08\n" });
    await createDataset(tx, system, { name: "people.json", dataClass: "pii", mediaType: "application/json", content: "[]" });
  });
  agent = await makeAgent("analyst");
  otherAgent = await makeAgent("intruder");
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  runtime = await createRuntime(db.prisma, { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } }, { databaseUrl: db.url, execute: true });
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

const JOIN_SCRIPT = `
const invoices = [];
let cursor: string | undefined;
do {
  const page = await tools.ledger.listInvoices({ currency: "EUR", limit: 500, cursor });
  invoices.push(...page.invoices);
  cursor = page.nextCursor ?? undefined;
} while (cursor);
const refunds = (await tools.ledger.listRefunds({ status: "succeeded", limit: 500 })).refunds;
const eur = new Set(invoices.map((i) => i.id));
const refunded = refunds.filter((r) => eur.has(r.invoiceId)).reduce((sum, r) => sum + r.amountMinor, 0);
const invoiced = invoices.reduce((sum, i) => sum + i.amountMinor, 0);
return { invoices: invoices.length, invoicedMinor: invoiced, refundedMinor: refunded };
`;

describe("submitRun → policy → sandbox", () => {
  it("auto-approves a read-only join over the ledger and returns the right numbers", async () => {
    const data = generateLedgerData();
    const eurInvoices = data.invoices.filter((i) => i.currency === "EUR");
    const eurIds = new Set(eurInvoices.map((i) => i.id));
    const expected = {
      invoices: eurInvoices.length,
      invoicedMinor: eurInvoices.reduce((s, i) => s + i.amountMinor, 0),
      refundedMinor: data.refunds
        .filter((r) => r.status === "succeeded" && eurIds.has(r.invoiceId))
        .slice(0, 500)
        .reduce((s, r) => s + r.amountMinor, 0),
    };
    const submitted = await submitRun(runtime, agent, { code: JOIN_SCRIPT, purpose: "EUR invoiced vs refunded", provenance: { model: "test-model" } });
    // The executor's slot is idle: intake stores the run claimed (running), in its own transaction.
    expect(submitted).toMatchObject({ decision: "allow", status: "running", capabilitySet: ["ledger.listInvoices", "ledger.listRefunds"] });
    expect(submitted.reasons[0]?.policyId).toBe("allow-read-only-unregulated");

    const done = await getRun(runtime, agent, { runId: submitted.runId, waitSeconds: 60 });
    expect(done.status).toBe("succeeded");
    expect(done.result).toEqual(expected);
    expect(done.isolation).toBe("strict");

    const calls = await db.prisma.runToolCall.findMany({ where: { runId: submitted.runId }, orderBy: { seq: "asc" } });
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.every((c) => c.outcome === "ok" && c.resultDigest)).toBe(true);
    const events = await db.prisma.auditEvent.findMany({ where: { subjectId: submitted.runId }, orderBy: { id: "asc" } });
    expect(events.map((e) => e.action)).toEqual(["run.submitted", "run.analyzed", "run.auto_approved", "run.queued", "run.running", "run.succeeded"]);
    // Staged together, from the submission to the claim: one statement of one transaction.
    expect(new Set(events.slice(0, 5).map((e) => e.at.getTime())).size).toBe(1);
    expect(events[4]!.at.getTime()).toBeLessThan(events[5]!.at.getTime());
  }, 90_000);

  it("a TypeScript script's stack names the lines the agent wrote, not the emitted JavaScript's", async () => {
    const code = [
      "// nothing to read",
      "interface Row { id: string }",
      "",
      "const rows: Row[] = [];",
      "",
      "",
      "throw new Error(`none of ${rows.length}`);",
    ].join("\n");
    const submitted = await submitRun(runtime, agent, { code, purpose: "throw on line seven" });
    const done = await getRun(runtime, agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(done.error).toMatchObject({ code: "SCRIPT_ERROR", message: expect.stringContaining("none of 0") });
    expect(done.error?.detail).toMatch(/script\.mjs:7:7\)/);
  });

  it("a result too big for an agent is handed as a preview with what to do instead", async () => {
    const submitted = await submitRun(runtime, agent, { code: `return Array.from({ length: 3000 }, (_, i) => ({ i }));`, purpose: "too much" });
    const done = await getRun(runtime, agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(done).toMatchObject({ status: "succeeded", truncated: true });
    expect(done.result).toEqual({
      preview: expect.stringMatching(/^\[\{"i":0\}/),
      note: expect.stringContaining("Return less (aggregate, count or pick fields in the script)"),
    });
    expect((done.result as { preview: string }).preview.length).toBe(8 * 1024);
  });

  it("a script with an error finding that still goes to reviewers is told to fix it rather than wait", async () => {
    const submitted = await submitRun(runtime, agent, { code: `const answer: number = "forty-two";\nreturn answer;`, purpose: "type error" });
    expect(submitted.findings).toEqual([expect.objectContaining({ code: "type_error", line: 1 })]);
    // The shipped policy sends a type error to one reviewer (review-type-errors).
    expect(submitted.status).toBe("pending_review");
    expect(submitted.next).toMatch(
      /^The type_error finding at line 1 \(findings\) will most likely make the script fail: fix the script and submit it again, and cancel this run \(cancel_run\)/,
    );
  });

  it("holds a script that emails customers for two reviewers", async () => {
    const view = await submitRun(runtime, agent, {
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "Please pay" }); return "sent";`,
      purpose: "Remind a customer",
    });
    expect(view).toMatchObject({ status: "previewing", decision: "escalate", approvalsRequired: 2, approvals: { approvedBy: [], required: 2 } });
    expect(view.reasons.map((r) => r.policyId)).toContain("review-open-world");
    // The preview intercepts the email instead of sending it; the run then waits for reviewers.
    const pending = await getRun(runtime, agent, { runId: view.runId, waitSeconds: 30 });
    expect(pending).toMatchObject({ status: "pending_review", plan: [{ server: "ledger", tool: "sendReminderEmail", arguments: { invoiceId: "inv_0001" } }] });
    const calls = await db.prisma.runToolCall.findMany({ where: { runId: view.runId } });
    expect(calls.map((c) => [c.phase, c.outcome])).toEqual([
      ["preview", "intercepted"],
      ["preview", "intercepted"],
    ]);
  });

  it("denies eval-like code with the deciding policy's id and text", async () => {
    const view = await submitRun(runtime, agent, { code: `return eval("1 + 1");`, purpose: "sneaky", language: "javascript" });
    expect(view.status).toBe("denied");
    expect(view.error?.code).toBe("POLICY_DENIED");
    expect(view.reasons).toContainEqual(expect.objectContaining({ policyId: "deny-critical-findings", text: expect.stringContaining("critical") }));
    expect(view.findings.some((f) => f.code === "eval_like" && f.line === 1)).toBe(true);
  });

  it("denies a tool that does not exist", async () => {
    const view = await submitRun(runtime, agent, { code: `return await tools.ledger.dropDatabase({});`, purpose: "x", language: "javascript" });
    expect(view.status).toBe("denied");
    expect(view.reasons.map((r) => r.policyId)).toContain("deny-unknown-tools");
  });

  it("escalates when a pii dataset is passed as input, and refuses unknown inputs", async () => {
    const view = await submitRun(runtime, agent, { code: `return inputs.list();`, purpose: "look", inputs: ["people.json"] });
    expect(view).toMatchObject({ status: "pending_review", approvalsRequired: 2 });
    await expect(submitRun(runtime, agent, { code: `return 1;`, purpose: "x", inputs: ["nope.csv"] })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("list_inputs"),
    });
  });

  it("passes public datasets into the sandbox", async () => {
    const view = await submitRun(runtime, agent, { code: `return inputs.csv("rates.csv");`, purpose: "rates", inputs: ["rates.csv"], language: "javascript" });
    expect(view.decision).toBe("allow");
    const done = await getRun(runtime, agent, { runId: view.runId, waitSeconds: 60 });
    expect(done).toMatchObject({ status: "succeeded" });
    expect(JSON.stringify(done.result)).toContain("1.08");
  }, 90_000);

  it("returns the same run for the same idempotency key and body, and refuses a different body", async () => {
    const body = { code: `return 1;`, purpose: "once", idempotencyKey: "k-1", language: "javascript" as const };
    const first = await submitRun(runtime, agent, body);
    const again = await submitRun(runtime, agent, body);
    expect(again.runId).toBe(first.runId);
    await expect(submitRun(runtime, agent, { ...body, code: "return 2;" })).rejects.toMatchObject({ code: "conflict" });
    expect(await db.prisma.run.count({ where: { idempotencyKey: "k-1" } })).toBe(1);
  });

  it("refuses malformed and oversize submissions with clear errors", async () => {
    await expect(submitRun(runtime, agent, { code: "return 1", purpose: "x", shell: "rm -rf /" })).rejects.toMatchObject({ code: "bad_request" });
    await expect(submitRun(runtime, agent, { code: "return 1" })).rejects.toMatchObject({ code: "bad_request", message: expect.stringContaining("purpose") });
    await expect(submitRun(runtime, agent, { code: "x".repeat(100_001), purpose: "big" })).rejects.toMatchObject({
      code: "payload_too_large",
      message: expect.stringContaining("100000"),
    });
  });

  it("trips the loop breaker when the same failing script is resubmitted", async () => {
    const body = { code: `return eval("2");`, purpose: "loop", language: "javascript" as const };
    const before = await db.prisma.run.count({ where: { agentId: agent.id, code: body.code } });
    for (let i = before; i < 3; i++) await submitRun(runtime, agent, body);
    await expect(submitRun(runtime, agent, body)).rejects.toMatchObject({
      runCode: "BUDGET_EXCEEDED",
      message: expect.stringContaining("change the approach"),
      // Not the budgets' general advice to wait: waiting and resubmitting is what it stops.
      next: expect.stringMatching(/^Do not submit this script again/),
    });
  });

  it("refuses runs beyond the hourly budget and beyond the concurrency budget", async () => {
    const burst = await makeAgent("burst");
    setEnvForChildren({ AIRLOCK_BUDGET_RUNS_PER_HOUR: "2" });
    try {
      // Scripts that wait for review, so nothing executes underneath the test.
      const remind = (n: number) => ({ code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_000${n}", message: "hi" });`, purpose: `remind ${n}` });
      await submitRun(runtime, burst, remind(1));
      await submitRun(runtime, burst, remind(2));
      await expect(submitRun(runtime, burst, remind(3))).rejects.toMatchObject({
        runCode: "BUDGET_EXCEEDED",
        message: expect.stringContaining("runs in the last hour"),
      });
    } finally {
      setEnvForChildren({ AIRLOCK_BUDGET_RUNS_PER_HOUR: "120" });
    }
    const swarm = await makeAgent("swarm");
    setEnvForChildren({ AIRLOCK_BUDGET_RUNS_PER_HOUR: "3" });
    try {
      const remind = (n: number) => ({ code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_001${n}", message: "hi" });`, purpose: `swarm ${n}` });
      const settled = await Promise.allSettled(Array.from({ length: 6 }, (_, n) => submitRun(runtime, swarm, remind(n))));
      expect(settled.filter((r) => r.status === "fulfilled")).toHaveLength(3);
      expect(await db.prisma.run.count({ where: { agentId: swarm.id } })).toBe(3);
    } finally {
      setEnvForChildren({ AIRLOCK_BUDGET_RUNS_PER_HOUR: "120" });
    }
    const busy = await makeAgent("busy");
    // Two runs of its own already queued (a run's agent never changes, so they are made for it).
    for (const n of [1, 2]) {
      await db.prisma.run.create({
        data: {
          agentId: busy.id,
          status: "queued",
          language: "javascript",
          code: `return ${n};`,
          codeSha256: `q${n}`,
          purpose: "queued",
          inputsDigest: "x",
          requestDigest: `busy-${n}`,
        },
      });
    }
    setEnvForChildren({ AIRLOCK_BUDGET_CONCURRENT_RUNS: "2" });
    try {
      await expect(submitRun(runtime, busy, { code: "return 4;", purpose: "four", language: "javascript" })).rejects.toMatchObject({
        message: expect.stringContaining("queued or running"),
      });
    } finally {
      setEnvForChildren({ AIRLOCK_BUDGET_CONCURRENT_RUNS: "50" });
      await db.prisma.run.updateMany({ where: { agentId: busy.id }, data: { status: "cancelled" } });
    }
  });

  it("keeps runs private to their agent and cancels pending ones once; asking again answers the same (cancel_run is idempotent)", async () => {
    const pending = await submitRun(runtime, agent, {
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", message: "hi" });`,
      purpose: "remind",
    });
    await expect(getRun(runtime, otherAgent, { runId: pending.runId })).rejects.toMatchObject({ code: "not_found" });
    await expect(cancelRun(runtime, otherAgent, pending.runId)).rejects.toMatchObject({ code: "not_found" });
    expect(await cancelRun(runtime, agent, pending.runId)).toEqual({ runId: pending.runId, status: "cancelled" });
    expect(await cancelRun(runtime, agent, pending.runId)).toEqual({ runId: pending.runId, status: "cancelled" });
    expect((await getRun(runtime, agent, { runId: pending.runId })).status).toBe("cancelled");
    expect(await db.prisma.auditEvent.count({ where: { subjectId: pending.runId, action: "run.cancelled" } })).toBe(1);
    // A run that ended otherwise cannot be cancelled: that is a conflict, not the same answer.
    const read = await submitRun(runtime, agent, { code: `return 1;`, purpose: "one" });
    expect((await getRun(runtime, agent, { runId: read.runId, waitSeconds: 20 })).status).toBe("succeeded");
    await expect(cancelRun(runtime, agent, read.runId)).rejects.toMatchObject({ code: "conflict", next: expect.stringContaining("nothing to cancel") });
  });

  it("replays a draft against past proposals and shows what would change", async () => {
    const strict = `${defaultPolicyText()}
@id("deny-all-email")
@reason("No reminder emails this week.")
forbid (principal, action == Action::"run", resource)
when { resource.tools.contains("ledger.sendReminderEmail") };
`;
    const replay = await replayDraft(db.prisma, strict, 100);
    const emails = replay.rows.filter((row) => row.before.decision === "escalate" && row.after.policies.includes("deny-all-email"));
    expect(emails.length).toBeGreaterThanOrEqual(2);
    expect(emails.every((row) => row.changed && row.after.decision === "deny")).toBe(true);
    const unchanged = replay.rows.filter((row) => !row.after.policies.includes("deny-all-email"));
    expect(unchanged.every((row) => !row.changed)).toBe(true);
    expect(replay.changed).toBe(emails.length);
    await expect(replayDraft(db.prisma, "permit(principal, action, resource", 10)).rejects.toMatchObject({ code: "bad_request" });
  });

  it("summarizes runs for the dashboard", async () => {
    const dashboard = await loadDashboard(db.prisma);
    const today = dashboard.days.at(-1)!;
    expect(today.succeeded).toBeGreaterThanOrEqual(2);
    expect(today.denied).toBeGreaterThanOrEqual(2);
    expect(dashboard.days).toHaveLength(14);
    expect(dashboard.topAgents[0]?.name).toBe("analyst");
    expect(dashboard.topTools.map((t) => t.tool)).toEqual(expect.arrayContaining(["ledger.listInvoices", "ledger.listRefunds"]));
    // Calls a plan preview intercepted (or the broker refused) were never made: the top tools count the calls made, a preview's reads included.
    expect(await db.prisma.runToolCall.count({ where: { outcome: "intercepted" } })).toBeGreaterThan(0);
    for (const { tool, calls } of dashboard.topTools) {
      const [server, name] = tool.split(".");
      expect([tool, calls]).toEqual([
        tool,
        await db.prisma.runToolCall.count({ where: { server, tool: name, outcome: { notIn: ["intercepted", "refused"] } } }),
      ]);
    }
    // Waiting for reviewers: the runs the review queue holds, a held result to release included.
    await insertRun(db, agent.id, { status: "pending_release" });
    expect(await db.prisma.run.count({ where: { status: "pending_review" } })).toBeGreaterThanOrEqual(1);
    // Polled: a preview still running may move its run to pending_review between the two reads.
    await expect
      .poll(
        async () =>
          (await loadDashboard(db.prisma)).pendingReviews - (await db.prisma.run.count({ where: { status: { in: ["pending_review", "pending_release"] } } })),
      )
      .toBe(0);
  });

  it("revoking an agent cancels its runs that have not started, audited", async () => {
    const doomed = await makeAgent("doomed");
    const pending = await submitRun(runtime, doomed, {
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0004", message: "x" });`,
      purpose: "remind",
    });
    // Revoked while its plan is previewed or once it waits for review: either way it never runs.
    expect(["previewing", "pending_review"]).toContain((await db.prisma.run.findUniqueOrThrow({ where: { id: pending.runId } })).status);
    await db.prisma.$transaction((tx) => revokeAgentAndStopRuns(tx, system, "doomed"));
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: pending.runId } });
    expect(run).toMatchObject({ status: "cancelled", error: { code: "CANCELLED" } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: pending.runId, action: "run.cancelled" } });
    expect(event.data).toMatchObject({ reason: "agent_revoked" });
  });
});
