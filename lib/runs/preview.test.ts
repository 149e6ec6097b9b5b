/**
 * Plan preview and bound apply on real parts (PostgreSQL, the demo ledger over stdio, the broker,
 * the shipped policies, the strict sandbox): an escalated write is previewed before anyone is
 * asked (reads real, writes intercepted, nothing reaches the upstream), the plan is what the
 * apply must follow, and a run whose writes change between preview and apply is stopped before the
 * first write that differs.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { submitRun } from "@/lib/intake/submit";
import type { TestDatabase } from "@/lib/testing/db";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import type { Runtime } from "./runtime";
import { cancelRun } from "./cancel";
import { getRun, type AgentActor, type RunView } from "./service";
import { transitionRun } from "./states";

const system: Actor = { type: "system", name: "test" };
const paid = generateLedgerData().invoices.filter((i) => i.status === "paid");
let ledger: LedgerRuntime;
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;

beforeAll(async () => {
  ledger = await startLedgerRuntime("planner");
  ({ db, runtime, agent } = ledger);
}, 120_000);

afterAll(async () => {
  await ledger?.close();
});

async function leaving(runId: string, statuses: string[]): Promise<RunView> {
  for (let i = 0; i < 6; i++) {
    const view = await getRun(runtime, agent, { runId, waitSeconds: 20 });
    if (!statuses.includes(view.status)) return view;
  }
  throw new Error(`run ${runId} stayed ${statuses.join("/")}`);
}

async function approve(runId: string): Promise<void> {
  await db.prisma.$transaction(async (tx) => {
    await transitionRun(tx, system, { runId, from: "pending_review", to: "approved" });
    await transitionRun(tx, system, { runId, from: "approved", to: "queued" });
  });
  runtime.startExecution(runId);
}

async function refundsOf(invoiceId: string, reason: string): Promise<number> {
  const page = (await runtime.broker.callTool("ledger", "listRefunds", { invoiceId, limit: 100 }, new AbortController().signal)) as {
    refunds: { reason: string }[];
  };
  return page.refunds.filter((r) => r.reason === reason).length;
}

const calls = (runId: string) => db.prisma.runToolCall.findMany({ where: { runId }, orderBy: { seq: "asc" } });

describe("plan preview", () => {
  it("previews an escalated refund before anyone is asked: the read is real, the write intercepted, nothing reaches the upstream", async () => {
    const invoice = paid[0]!;
    const reason = "preview goodwill";
    const view = await submitRun(runtime, agent, {
      code: `const inv = await tools.ledger.listInvoices({ status: "paid", limit: 1 });
const r = await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: 150, currency: "${invoice.currency}", reason: "${reason}", idempotencyKey: "preview-1-${invoice.id}" });
return r.refund.id;`,
      purpose: "one refund",
    });
    expect(view.status).toBe("previewing");
    const pending = await leaving(view.runId, ["previewing"]);
    expect(pending.status).toBe("pending_review");
    expect(pending.plan).toEqual([
      {
        seq: 2,
        server: "ledger",
        tool: "issueRefund",
        arguments: { invoiceId: invoice.id, amountMinor: 150, currency: invoice.currency, reason, idempotencyKey: `preview-1-${invoice.id}` },
      },
    ]);
    // Nothing from the preview but the plan reaches the agent.
    expect(pending.result).toBeUndefined();
    expect(await refundsOf(invoice.id, reason)).toBe(0);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect((run.plan as { writes: { money: unknown }[] }).writes[0]!.money).toEqual({
      amount: invoice.currency === "JPY" ? "150" : "1.50",
      currency: invoice.currency,
      subject: invoice.id,
    });
    expect((await calls(view.runId)).map((c) => [c.phase, c.tool, c.outcome, c.readOnly])).toEqual([
      ["preview", "listInvoices", "ok", true],
      ["preview", "issueRefund", "intercepted", false],
      // Previewed twice, to know the writes do not change from one run of the script to the next.
      ["preview", "listInvoices", "ok", true],
      ["preview", "issueRefund", "intercepted", false],
    ]);

    await approve(view.runId);
    const done = await leaving(view.runId, ["queued", "running"]);
    expect(done).toMatchObject({ status: "succeeded", result: expect.stringMatching(/^ref_/) });
    expect(await refundsOf(invoice.id, reason)).toBe(1);
    expect((await calls(view.runId)).filter((c) => c.phase === "apply").map((c) => [c.tool, c.outcome])).toEqual([
      ["listInvoices", "ok"],
      ["issueRefund", "ok"],
    ]);
  });

  it("an agent's submit waits for the preview, so its answer carries the plan: no wait is started for what is already there", async () => {
    const invoice = paid[9]!;
    const started = Date.now();
    const view = await submitRun(
      runtime,
      agent,
      {
        code: `await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: 5, currency: "${invoice.currency}", reason: "answered with its plan", idempotencyKey: "answered-${invoice.id}" });`,
        purpose: "one refund",
      },
      { wait: { seconds: 10 } },
    );
    expect(view).toMatchObject({ status: "pending_review", plan: [{ seq: 1, server: "ledger", tool: "issueRefund" }] });
    expect(Date.now() - started).toBeLessThan(10_000);
    await cancelRun({ db: db.prisma }, agent, view.runId);
  });

  it("a write that depends on data changed between preview and apply is stopped before the first write that differs", async () => {
    const invoice = paid[1]!;
    const reason = "preview depends on data";
    const view = await submitRun(runtime, agent, {
      code: `const before = await tools.ledger.listRefunds({ invoiceId: "${invoice.id}", limit: 100 });
const n = before.refunds.length;
await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: n + 1, reason: "${reason}", idempotencyKey: "depends-" + n + "-${invoice.id}" });
return n;`,
      purpose: "a refund sized by the refunds so far",
    });
    expect((await leaving(view.runId, ["previewing"])).status).toBe("pending_review");
    // Someone else refunds the invoice before the run is approved.
    await runtime.broker.callTool(
      "ledger",
      "issueRefund",
      { invoiceId: invoice.id, amountMinor: 1, reason: "meanwhile", idempotencyKey: `meanwhile-${invoice.id}` },
      new AbortController().signal,
    );
    await approve(view.runId);
    const done = await leaving(view.runId, ["queued", "running"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PLAN_DIVERGED");
    expect(done.error?.message).toContain("write 1 (ledger.issueRefund) has arguments");
    expect(await refundsOf(invoice.id, reason)).toBe(0);
    const apply = (await calls(view.runId)).filter((c) => c.phase === "apply");
    expect(apply.map((c) => [c.tool, c.outcome])).toEqual([
      ["listRefunds", "ok"],
      ["issueRefund", "refused"],
    ]);
  });

  it("attack (approving what can never run): a write whose arguments depend on the time or randomness is never offered to reviewers; the run fails PLAN_UNSTABLE naming the argument", async () => {
    for (const [source, invoice] of [
      ["Date.now()", paid[20]!],
      ["Math.random()", paid[21]!],
      ["new Date().toISOString()", paid[22]!],
    ] as const) {
      const view = await submitRun(runtime, agent, {
        code: `await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: 100, currency: "${invoice.currency}", reason: "goodwill", idempotencyKey: "key-" + ${source} });`,
        purpose: "a refund keyed by the moment",
      });
      const done = await leaving(view.runId, ["previewing"]);
      expect(done).toMatchObject({ status: "failed", error: { code: "PREVIEW_FAILED" } });
      expect(done.error?.message).toMatch(
        /PLAN_UNSTABLE: two previews of the same script planned different writes \(write 1 \(ledger\.issueRefund\) has "key-.+" at \/idempotencyKey in one and "key-.+" in the other\)/,
      );
      expect(done.error?.next).toMatch(/^Make each write's arguments depend only on what the script reads/);
      expect(await db.prisma.auditEvent.count({ where: { action: "run.pending_review", subjectId: view.runId } })).toBe(0);
      expect(await refundsOf(invoice.id, "goodwill")).toBe(0);
    }
  });

  it("a preview that fails ends the run with PREVIEW_FAILED and its error before any reviewer is asked", async () => {
    const view = await submitRun(runtime, agent, {
      code: `await tools.ledger.issueRefund({ invoiceId: "${paid[2]!.id}", amountMinor: 1, reason: "never", idempotencyKey: "preview-fails-1" });
throw new Error("the script gave up");`,
      purpose: "a preview that throws",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toContain("the script gave up");
    const actions = (await db.prisma.auditEvent.findMany({ where: { subjectId: view.runId }, orderBy: { id: "asc" } })).map((e) => e.action);
    expect(actions).toContain("run.previewing");
    expect(actions).not.toContain("run.pending_review");
  });

  it.each([
    // Built at run time: a credential written in the script is refused at intake (lib/intake/credentials.ts).
    ["a credential", `"Pay at https://billing:" + "Zq8wX3pL9tR2" + "@pay.example.com/inv"`, "connection_string"],
    ["a character PostgreSQL refuses", `"soon\\u0000"`, "cannot be stored as sent (U+0000, a lone surrogate or a __proto__ key)"],
  ])("a write whose arguments hold %s is never planned: the preview fails, so no reviewer approves what they cannot see", async (_what, message, named) => {
    const view = await submitRun(runtime, agent, {
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", message: ${message} });\nreturn 1;`,
      purpose: "a reminder the screen would rewrite",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toContain("PLAN_UNREVIEWABLE: write 1 (ledger.sendReminderEmail)");
    expect(done.error?.message).toContain(named);
    expect(done.error?.message).not.toContain("Zq8wX3pL9tR2");
    expect((await calls(view.runId)).map((c) => [c.tool, c.phase, c.outcome])).toEqual([["sendReminderEmail", "preview", "refused"]]);
  });

  it("a write whose arguments hold a placeholder no earlier write answered with is never planned: a script cannot make one up to stand for what reviewers never saw", async () => {
    const [first, second] = [paid[5]!, paid[6]!];
    // The answer's id is a placeholder; its invoiceId, amount and currency are the call's own
    // arguments. At apply a replayed idempotency key would answer with another refund's values.
    const view = await submitRun(runtime, agent, {
      code: `const a = await tools.ledger.issueRefund({ invoiceId: "${first.id}", amountMinor: 1, currency: "${first.currency}", reason: "a cent", idempotencyKey: "stray-1-${first.id}" });
const dry = String(a.refund.id).startsWith("@plan:");
const pick = (p) => (dry ? ["@plan:1", "refund", p].join("/") : a.refund[p]);
await tools.ledger.issueRefund({ invoiceId: pick("invoiceId"), amountMinor: pick("amountMinor"), currency: pick("currency"), reason: "follow-up", idempotencyKey: "stray-2-${second.id}" });
return a.refund.id;`,
      purpose: "two refunds",
      language: "javascript",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toContain('PLAN_UNREVIEWABLE: write 2 (ledger.issueRefund): its arguments hold "@plan:1/refund/');
    expect((await calls(view.runId)).map((c) => [c.tool, c.phase, c.outcome])).toEqual([
      ["issueRefund", "preview", "intercepted"],
      ["issueRefund", "preview", "refused"],
    ]);
  });

  it("attack: a refund whose amount is what an earlier write will answer is never planned, so no write's money is left out of the plan's totals", async () => {
    const [first, second] = [paid[10]!, paid[11]!];
    // The first refund's answer has an amount only the real call knows (a placeholder in preview): a
    // second refund of that amount would be planned with no money, and its amount chosen at apply.
    const view = await submitRun(runtime, agent, {
      code: `const a = await tools.ledger.issueRefund({ invoiceId: "${first.id}", amountMinor: 1, currency: "${first.currency}", reason: "a cent", idempotencyKey: "amount-1-${first.id}" });
await tools.ledger.issueRefund({ invoiceId: "${second.id}", amountMinor: a.refund.amount, currency: "${second.currency}", reason: "as much again", idempotencyKey: "amount-2-${second.id}" });
return "ok";`,
      purpose: "a refund sized by another",
      language: "javascript",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toContain(
      'PLAN_UNREVIEWABLE: write 2 (ledger.issueRefund): the amount it moves (argument /amountMinor) is "@plan:1/refund/amount", not a number',
    );
    expect((await calls(view.runId)).map((c) => [c.tool, c.phase, c.outcome])).toEqual([
      ["issueRefund", "preview", "intercepted"],
      ["issueRefund", "preview", "refused"],
    ]);
  });

  it("attack: a write the broker would refuse at apply is never planned, so reviewers never approve a run that stops after real refunds", async () => {
    const invoice = paid[7]!;
    const before = await refundsOf(invoice.id, "goodwill, netted");
    // Planned, the two would total 0.01: the first refunds 3,000.00 and the second (negative) is refused at apply.
    const view = await submitRun(runtime, agent, {
      code: `for (const [i, amountMinor] of [300000, -299999].entries())
  await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor, currency: "${invoice.currency}", reason: "goodwill, netted", idempotencyKey: "netted-" + i + "-${invoice.id}" });
return "ok";`,
      purpose: "a refund netted by a negative one",
      language: "javascript",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toContain("INVALID_ARGUMENTS: write 2 (ledger.issueRefund): invalid arguments for ledger.issueRefund");
    expect(done.error?.message).toContain("amountMinor");
    expect((await calls(view.runId)).map((c) => [c.phase, c.outcome])).toEqual([
      ["preview", "intercepted"],
      ["preview", "refused"],
    ]);
    expect(await refundsOf(invoice.id, "goodwill, netted")).toBe(before);
  });

  it("a write whose argument is a placeholder (a value only the real call will know) is planned, though it does not meet the schema's format", async () => {
    // sendReminderEmail's preview answers `to` with a placeholder; updateCustomerEmail wants an email address there.
    const view = await submitRun(runtime, agent, {
      code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0006", message: "Reminder" });
await tools.ledger.updateCustomerEmail({ customerId: "cus_002", email: sent.to });
return 1;`,
      purpose: "remind, then keep the address the reminder went to",
      language: "javascript",
    });
    const pending = await leaving(view.runId, ["previewing"]);
    expect(pending.error).toBeUndefined();
    expect(pending).toMatchObject({ status: "pending_review", plan: [{ tool: "sendReminderEmail" }, { tool: "updateCustomerEmail" }] });
    const stored = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId }, select: { plan: true } });
    expect(stored.plan).toMatchObject({ writes: [{ tool: "sendReminderEmail" }, { tool: "updateCustomerEmail", arguments: { email: "@plan:1/to" } }] });
    await cancelRun({ db: db.prisma }, agent, view.runId);
  });

  it("a placeholder excuses only itself: the same write with another argument off its schema is never planned", async () => {
    const view = await submitRun(runtime, agent, {
      code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0006", message: "Reminder" });
await tools.ledger.updateCustomerEmail({ customerId: JSON.parse("42"), email: sent.to });
return 1;`,
      purpose: "a customer id of the wrong type",
      language: "javascript",
    });
    const done = await leaving(view.runId, ["previewing"]);
    expect(done.error?.message).toContain("INVALID_ARGUMENTS: write 2 (ledger.updateCustomerEmail)");
    expect(done.error?.message).toContain("customerId");
  });

  it("a write the screen rewrites at apply is refused, even where its screened form matches the plan (a redaction stands for any secret)", async () => {
    const invoice = paid[3]!;
    // The preview sends the redaction's own text; the apply a real link, which the screen rewrites into that text.
    const view = await submitRun(runtime, agent, {
      code: `const first = await tools.ledger.sendReminderEmail({ invoiceId: "${invoice.id}", message: "Friendly reminder" });
const previewing = first.reminderId.startsWith("@plan:");
const link = previewing ? "[REDACTED:connection_string]" : "https://billing:" + "Zq8wX3pL9tR2" + "@evil.example.net/phish";
await tools.ledger.sendReminderEmail({ invoiceId: "${invoice.id}", message: "Please pay here: " + link });
return previewing;`,
      purpose: "two reminders",
    });
    expect((await leaving(view.runId, ["previewing"])).status).toBe("pending_review");
    await approve(view.runId);
    const done = await leaving(view.runId, ["queued", "running"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PLAN_DIVERGED");
    expect(done.error?.message).toContain("connection_string");
    expect(done.error?.message).not.toContain("Zq8wX3pL9tR2");
    const state = JSON.parse(await readFile(ledger.stateFile, "utf8")) as { outbox: { invoiceId: string; message: string }[] };
    expect(state.outbox.filter((m) => m.invoiceId === invoice.id).map((m) => m.message)).toEqual(["Friendly reminder"]);
    expect((await calls(view.runId)).filter((c) => c.phase === "apply").map((c) => [c.tool, c.outcome])).toEqual([
      ["sendReminderEmail", "ok"],
      ["sendReminderEmail", "refused"],
    ]);
  });

  it("a read-only run that escalates (regulated data) goes to review without a preview", async () => {
    const view = await submitRun(runtime, agent, { code: `return (await tools.ledger.listCustomers({ limit: 1 })).customers.length;`, purpose: "read pii" });
    expect(view.status).toBe("pending_review");
    expect(view.plan).toBeUndefined();
  });

  it("a run cancelled during its preview stops the preview and never reaches reviewers", async () => {
    const view = await submitRun(runtime, agent, {
      code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", message: "soon" });
await new Promise((resolve) => setTimeout(resolve, 20_000));
return "late";`,
      purpose: "a slow preview",
    });
    expect(view.status).toBe("previewing");
    await expect.poll(async () => (await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } })).heartbeatAt, { timeout: 10_000 }).not.toBeNull();
    expect(await cancelRun(runtime, agent, view.runId)).toEqual({ runId: view.runId, status: "cancelled" });
    // The preview's heartbeat aborts its sandbox within a second; whenever it ends, it writes nothing over the cancel.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await db.prisma.runToolCall.count({ where: { runId: view.runId } })).toBe(0);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(run).toMatchObject({ status: "cancelled", plan: null });
    const actions = (await db.prisma.auditEvent.findMany({ where: { subjectId: view.runId }, orderBy: { id: "asc" } })).map((e) => e.action);
    expect(actions).not.toContain("run.pending_review");
  });
});
