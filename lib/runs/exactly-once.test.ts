/**
 * Exactly once on real parts (PostgreSQL, the demo ledger over stdio, the broker, the shipped
 * policies, the strict sandbox): writes that PostgreSQL refuses end the run instead of leaving it
 * `running`; a call that cannot be recorded first is not made; the limits policy saw are the
 * limits the sandbox enforces. Each failure is forced at the database, the way a hostile payload
 * would make it happen, with a trigger that refuses a marked row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import type { TestDatabase } from "@/lib/testing/db";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import type { Runtime } from "./runtime";
import { submitRun } from "@/lib/intake/submit";
import { contractDiagnostics } from "@/lib/intake/typecheck";
import { getRun, type AgentActor, type RunView } from "./service";
import { transitionRun } from "./states";

const system: Actor = { type: "system", name: "test" };
const paidInvoice = generateLedgerData().invoices.find((i) => i.status === "paid")!.id;
let ledger: LedgerRuntime;
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;

beforeAll(async () => {
  ledger = await startLedgerRuntime("once");
  ({ db, runtime, agent } = ledger);
  // Stand-ins for hostile content PostgreSQL refuses, keyed on markers no normal run carries.
  await db.prisma.$executeRawUnsafe(`
    CREATE FUNCTION refuse_marked_result() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.result::text LIKE '%poison-terminal%' THEN RAISE EXCEPTION 'refused terminal write'; END IF;
      RETURN NEW;
    END $$`);
  await db.prisma.$executeRawUnsafe(`
    CREATE FUNCTION refuse_marked_call() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.outcome = 'started' AND NEW.args::text LIKE '%poison-start%' THEN RAISE EXCEPTION 'refused call record'; END IF;
      RETURN NEW;
    END $$`);
  await db.prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_marked_run BEFORE UPDATE ON "Run" FOR EACH ROW EXECUTE FUNCTION refuse_marked_result()`);
  await db.prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_marked_call BEFORE INSERT ON "RunToolCall" FOR EACH ROW EXECUTE FUNCTION refuse_marked_call()`);
}, 120_000);

afterAll(async () => {
  await ledger?.close();
});

async function finished(runId: string): Promise<RunView> {
  for (let i = 0; i < 4; i++) {
    const view = await getRun(runtime, agent, { runId, waitSeconds: 30 });
    if (!["queued", "running"].includes(view.status)) return view;
  }
  throw new Error(`run ${runId} did not finish`);
}

/** Approves an escalated run, once its plan preview is done, through the state machine (the review service is tested on its own). */
async function approve(runId: string): Promise<void> {
  expect((await getRun(runtime, agent, { runId, waitSeconds: 30 })).status).toBe("pending_review");
  await db.prisma.$transaction(async (tx) => {
    await transitionRun(tx, system, { runId, from: "pending_review", to: "approved" });
    await transitionRun(tx, system, { runId, from: "approved", to: "queued" });
  });
  runtime.startExecution(runId);
}

const actions = async (runId: string) => (await db.prisma.auditEvent.findMany({ where: { subjectId: runId }, orderBy: { id: "asc" } })).map((e) => e.action);

describe("the run always ends, once", () => {
  it("a terminal write that fails anyway ends the run with STORAGE_REJECTED and its audit event", async () => {
    const view = await submitRun(runtime, agent, { code: `return "poison-terminal";`, purpose: "a result the database refuses" });
    const done = await finished(view.runId);
    expect(done).toMatchObject({ status: "failed", error: { code: "STORAGE_REJECTED" } });
    expect(await actions(view.runId)).toEqual(["run.submitted", "run.analyzed", "run.auto_approved", "run.queued", "run.running", "run.failed"]);
    const terminal = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: view.runId, action: "run.failed" } });
    expect(terminal.data).toMatchObject({ errorCode: "STORAGE_REJECTED", attemptedStatus: "succeeded", toolCalls: 0 });
  });

  it("a call whose record cannot be committed first is not made, even if the script swallows the error", async () => {
    const invoiceId = "inv_0002";
    const view = await submitRun(runtime, agent, {
      code: `try { await tools.ledger.issueRefund({ invoiceId: "${invoiceId}", amountMinor: 1, reason: "poison-start goodwill", idempotencyKey: "poison-start-1" }); } catch { /* hide it */ }
return "all good";`,
      purpose: "a refund whose record the database refuses",
    });
    await approve(view.runId);
    const done = await finished(view.runId);
    expect(done).toMatchObject({ status: "failed", error: { code: "STORAGE_REJECTED" } });
    expect(await db.prisma.runToolCall.count({ where: { runId: view.runId, phase: "apply" } })).toBe(0);
    const refunds = (await runtime.broker.callTool("ledger", "listRefunds", { invoiceId, limit: 100 }, new AbortController().signal)) as {
      refunds: { reason: string }[];
    };
    expect(refunds.refunds.filter((r) => r.reason.startsWith("poison-start"))).toHaveLength(0);
  });

  it("a call that is not read-only is on record as started before the upstream sees it, then completed once", async () => {
    const view = await submitRun(runtime, agent, {
      code: `const r = await tools.ledger.issueRefund({ invoiceId: "${paidInvoice}", amountMinor: 1, reason: "recorded first", idempotencyKey: "recorded-first-1" }); return r.refund.reason;`,
      purpose: "one recorded refund",
    });
    await approve(view.runId);
    const done = await finished(view.runId);
    expect(done.error ?? null).toBeNull();
    expect(done).toMatchObject({ status: "succeeded", result: "recorded first" });
    const calls = await db.prisma.runToolCall.findMany({ where: { runId: view.runId, phase: "apply" } });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: "issueRefund", readOnly: false, outcome: "ok" });
    // Completed once: the trigger refuses any further change.
    await expect(db.prisma.runToolCall.update({ where: { id: calls[0]!.id }, data: { outcome: "error" } })).rejects.toThrow(/append-only/);
  });
});

describe("one script contract", () => {
  it("the demo ledger's generated declarations type-check cleanly beside the script contract", () => {
    expect(contractDiagnostics(runtime.registry.declarations())).toEqual([]);
  });
});

describe("limits that match what policy and reviewers saw", () => {
  it("the sandbox enforces the decided maxToolCalls (1000), not its own default", async () => {
    const view = await submitRun(runtime, agent, {
      code: `for (let i = 0; i < 1500; i++) await tools.ledger.listRefunds({ limit: 1 }); return "done";`,
      purpose: "a flood of reads",
    });
    // Claimed at intake when the slot is idle, else queued for it.
    expect(["queued", "running"]).toContain(view.status);
    const done = await finished(view.runId);
    expect(done).toMatchObject({ status: "failed", error: { code: "BUDGET_EXCEEDED" } });
    expect(await db.prisma.runToolCall.count({ where: { runId: view.runId } })).toBe(RUN_LIMIT_DEFAULTS.maxToolCalls);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(run.limits).toEqual({ ...RUN_LIMIT_DEFAULTS, writeCaps: {} });
    expect((run.policyRequest as { entities: { attrs: { limits?: unknown } }[] }).entities.find((e) => e.attrs.limits)?.attrs.limits).toEqual(
      RUN_LIMIT_DEFAULTS,
    );
  }, 60_000);

  it("caps each tool that is not read-only at its call sites, or at maxToolCalls with a finding when a site can repeat", async () => {
    const straight = await submitRun(runtime, agent, {
      code: `await tools.ledger.issueRefund({ invoiceId: "inv_0004", amountMinor: 1, reason: "first one", idempotencyKey: "cap-a-0001" });
await tools.ledger.issueRefund({ invoiceId: "inv_0004", amountMinor: 1, reason: "second one", idempotencyKey: "cap-a-0002" });
return (await tools.ledger.listRefunds({ limit: 1 })).refunds.length;`,
      purpose: "two refunds",
    });
    const straightRun = await db.prisma.run.findUniqueOrThrow({ where: { id: straight.runId } });
    expect(straightRun.limits).toMatchObject({ maxToolCalls: 1000, writeCaps: { "ledger.issueRefund": 2 } });
    expect(straight.findings.map((f) => f.code)).not.toContain("unbounded_loop");

    const looped = await submitRun(runtime, agent, {
      code: `for (const id of ["inv_0004", "inv_0005"]) await tools.ledger.issueRefund({ invoiceId: id, amountMinor: 1, reason: "in a loop", idempotencyKey: "cap-b-" + id });`,
      purpose: "refunds in a loop",
    });
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: looped.runId } })).limits).toMatchObject({ writeCaps: { "ledger.issueRefund": 1000 } });
    expect(looped.findings).toContainEqual(expect.objectContaining({ code: "unbounded_loop", line: 1 }));
  });
});
