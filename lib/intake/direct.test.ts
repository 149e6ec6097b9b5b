/**
 * The direct lane (call_tool) on real parts: the demo ledger over stdio, PostgreSQL, the shipped
 * policies. A read-only call returns the tool's answer as a sealed, audited run of kind direct;
 * every call the lane must not make (a write, a call policy would escalate, a quarantined tool) is
 * refused before the upstream sees it, and the ledger's own state shows nothing happened.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAuditChain } from "@/lib/audit/verify";
import { directCallScript, parseDirectCall } from "@/lib/contracts/direct-call";
import { isAppError } from "@/lib/errors";
import { getRun } from "@/lib/runs/service";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { submitDirectCall } from "./direct";
import { DirectCallRefused } from "./submit";

let ledger: LedgerRuntime;
beforeAll(async () => {
  ledger = await startLedgerRuntime("direct-bot");
}, 90_000);
afterAll(() => ledger?.close());

async function refusal(raw: unknown): Promise<unknown> {
  try {
    await submitDirectCall(ledger.runtime, ledger.agent, raw);
  } catch (error) {
    return error;
  }
  throw new Error("the call was not refused");
}

const refusedEvents = () => ledger.db.prisma.auditEvent.findMany({ where: { action: "run.refused", subjectId: ledger.agent.id }, orderBy: { id: "asc" } });

describe("the direct call as a script", () => {
  it("is written once and read back exactly; any other text is not a direct call", () => {
    const code = directCallScript("ledger", "list-invoices", { status: "open", nested: { b: 1, a: [1, "x\u2028"] } });
    expect(code).toBe(`return await tools["ledger"]["list-invoices"]({"nested":{"a":[1,"x\u2028"],"b":1},"status":"open"});`);
    expect(parseDirectCall(code)).toEqual({ server: "ledger", tool: "list-invoices", arguments: { status: "open", nested: { b: 1, a: [1, "x\u2028"] } } });
    for (const other of [
      code.replace("open", "paid") + "\nawait tools.ledger.issueRefund({});",
      code.replace('{"nested"', '{ "nested"'), // not canonical
      `return await tools["ledger"]["listInvoices"]({"__proto__":{"x":1}});`,
      `return await tools["ledger"]["listInvoices"]([1]);`,
      `return await tools.ledger.listInvoices({});`,
    ]) {
      expect(parseDirectCall(other), other).toBeNull();
    }
  });
});

describe("call_tool", () => {
  it("a read-only call returns the tool's answer as a sealed run of kind direct, audited like any run", async () => {
    const view = await submitDirectCall(ledger.runtime, ledger.agent, { server: "ledger", tool: "listInvoices", arguments: { status: "open", limit: 3 } });
    const settled = await getRun(ledger.runtime, ledger.agent, { runId: view.runId, waitSeconds: 30 });
    expect(settled).toMatchObject({ status: "succeeded", decision: "allow" });
    const direct = await ledger.runtime.broker.callTool("ledger", "listInvoices", { status: "open", limit: 3 }, AbortSignal.timeout(10_000));
    expect(settled.result).toEqual(direct);
    expect((settled.result as { invoices: unknown[] }).invoices).toHaveLength(3);

    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: view.runId }, include: { toolCalls: true } });
    expect(run).toMatchObject({
      kind: "direct",
      code: directCallScript("ledger", "listInvoices", { limit: 3, status: "open" }),
      purpose: "Direct call of ledger.listInvoices",
    });
    expect(run.toolCalls.map((c) => [c.server, c.tool, c.outcome])).toEqual([["ledger", "listInvoices", "ok"]]);
    const events = await ledger.db.prisma.auditEvent.findMany({ where: { subjectId: view.runId }, orderBy: { id: "asc" } });
    expect(events.map((e) => e.action)).toEqual(["run.submitted", "run.analyzed", "run.auto_approved", "run.queued", "run.running", "run.succeeded"]);
    expect(events[0]!.data).toMatchObject({ kind: "direct" });
    expect(events.at(-1)!.data).toMatchObject({ toolCalls: 1 });
    expect((run.policyRequest as { action: unknown }).action).toEqual({ type: "Action", id: "call" });
    expect(await verifyAuditChain(ledger.db.prisma, { checkpoints: null })).toMatchObject({ ok: true });
  });

  it("passes the result through the gate: a secret the upstream returns does not reach the agent", async () => {
    const view = await submitDirectCall(ledger.runtime, ledger.agent, { server: "ledger", tool: "listRefunds", arguments: { limit: 50 } });
    const settled = await getRun(ledger.runtime, ledger.agent, { runId: view.runId, waitSeconds: 30 });
    expect(settled.status).toBe("succeeded");
    expect(JSON.stringify(settled.result)).toContain("[REDACTED:stripe_key]");
    expect(JSON.stringify(settled)).not.toMatch(/sk_test_/);
  });

  it("refuses a tool that may change data, before the upstream sees it, and records the refusal", async () => {
    const before = await readFile(ledger.stateFile, "utf8").catch(() => "");
    const error = await refusal({ server: "ledger", tool: "issueRefund", arguments: { invoiceId: "inv_0001", amountMinor: 100, idempotencyKey: "k1" } });
    expect(error).toBeInstanceOf(DirectCallRefused);
    expect((error as DirectCallRefused).runCode).toBe("USE_SUBMIT_RUN");
    expect((error as Error).message).toMatch(/ledger\.issueRefund is not accepted as read-only.*submit_run/);
    expect(await readFile(ledger.stateFile, "utf8").catch(() => "")).toBe(before);
    expect(await ledger.db.prisma.run.count({ where: { kind: "direct", code: { contains: "issueRefund" } } })).toBe(0);
    expect((await refusedEvents()).at(-1)!.data).toMatchObject({ reason: "USE_SUBMIT_RUN", codeSha256: null });
  });

  it("refuses a read that policy would send to reviewers (personal data), naming the policy, without calling it", async () => {
    const calls = await ledger.db.prisma.runToolCall.count();
    const error = await refusal({ server: "ledger", tool: "listCustomers", arguments: {} });
    expect(error).toBeInstanceOf(DirectCallRefused);
    expect((error as DirectCallRefused).details).toMatchObject({ reasons: expect.arrayContaining(["review-regulated-data"]) });
    expect((error as Error).message).toMatch(/Policy would send this call to reviewers: .*submit_run/);
    expect(await ledger.db.prisma.runToolCall.count()).toBe(calls);
    expect(await ledger.db.prisma.run.count({ where: { kind: "direct", status: "pending_review" } })).toBe(0);
  });

  it("refuses a quarantined tool (its definition changed upstream) until an admin accepts it", async () => {
    const tool = ledger.runtime.broker.tool("ledger", "listRefunds")!;
    tool.quarantined = true; // what the broker does when the upstream's definition changes
    try {
      const error = await refusal({ server: "ledger", tool: "listRefunds", arguments: {} });
      expect(error).toBeInstanceOf(DirectCallRefused);
      expect((error as Error).message).toBe(
        "ledger.listRefunds may not be called: its definition changed, and it is quarantined until two admins accept the new one. Nothing was called. A script calling it is denied too: tell the user an admin must accept it first (the Tools page).",
      );
      // What the agent is told to do next says the same, not USE_SUBMIT_RUN's "write a script".
      expect((error as DirectCallRefused).next).toBe("A script calling it is denied too: tell the user an admin must accept it first (the Tools page).");
    } finally {
      tool.quarantined = false;
    }
  });

  it("a call policy denies (arguments that break the tool's schema) is stored denied with the reason, and nothing is called", async () => {
    const view = await submitDirectCall(ledger.runtime, ledger.agent, { server: "ledger", tool: "listInvoices", arguments: { status: "nonsense" } });
    expect(view).toMatchObject({ status: "denied", decision: "deny" });
    expect(view.reasons.map((r) => r.policyId)).toContain("deny-invalid-arguments");
    // Told in the call's terms: no position in a script the agent never wrote, no script to fix.
    expect(view.error?.message).toMatch(/^tools\.ledger\.listInvoices: status must be/);
    expect(view.error?.message).not.toMatch(/line \d+:\d+/);
    expect(view.error?.next).toBe(
      "Fix what the findings and reasons name (the call's arguments, or the call itself), then call again; the same call will be denied again.",
    );
    expect(await ledger.db.prisma.runToolCall.count({ where: { runId: view.runId } })).toBe(0);
  });

  it("refuses malformed calls with a typed error: unknown tools, extra fields, a __proto__ key", async () => {
    for (const [raw, pattern] of [
      [{ server: "ledger", tool: "dropTables", arguments: {} }, /ledger\.dropTables is not a tool; search_tools/],
      [{ server: "ledger", tool: "listInvoices", arguments: {}, code: "return 1" }, /code/],
      [{ server: "ledger", tool: "listInvoices", arguments: [] }, /arguments/],
      [{ server: "ledger", tool: "listInvoices", arguments: JSON.parse('{"filter":{"__proto__":{"status":"paid"}}}') }, /arguments\.filter\.__proto__/],
      // At the top level too, where a parsed copy would have made it the prototype and so hidden it.
      [{ server: "ledger", tool: "listInvoices", arguments: JSON.parse('{"limit":1,"__proto__":{"status":"paid"}}') }, /arguments\.__proto__/],
    ] as const) {
      const error = await refusal(raw);
      expect(isAppError(error) && error.code, JSON.stringify(raw)).toBe("bad_request");
      expect((error as Error).message).toMatch(pattern);
    }
  });

  it("counts against the agent's budgets like any run", async () => {
    const hourly = 120;
    const made = await ledger.db.prisma.run.count({ where: { agentId: ledger.agent.id } });
    await ledger.db.prisma.run.createMany({
      data: Array.from({ length: hourly - made }, (_, i) => ({
        agentId: ledger.agent.id,
        status: "denied" as const,
        language: "javascript" as const,
        code: `return ${i};`,
        codeSha256: `filler-${i}`,
        purpose: "filler",
        inputsDigest: "none",
        requestDigest: `filler-${i}`,
      })),
    });
    const error = await refusal({ server: "ledger", tool: "listInvoices", arguments: {} });
    expect(error).toMatchObject({ runCode: "BUDGET_EXCEEDED" });
    expect((await refusedEvents()).at(-1)!.data).toMatchObject({ reason: "BUDGET_EXCEEDED" });
  });

  it("a run's kind never changes, even for a database role that can update runs", async () => {
    const run = await ledger.db.prisma.run.findFirstOrThrow({ where: { kind: "direct" } });
    await expect(ledger.db.prisma.run.update({ where: { id: run.id }, data: { kind: "script" } })).rejects.toThrow(
      /its kind \(direct\) is set when it is submitted and never changes/,
    );
  });
});
