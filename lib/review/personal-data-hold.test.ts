/**
 * Personal data a script no person reviewed read from a tool is never handed over unreviewed, on
 * real parts (the demo ledger, whose refund ref_002 here carries an email and a card number in its
 * free-text reason, in a tool classed internal; a strict sandbox; the shipped policies;
 * PostgreSQL). Tokens replace personal data a script returns as read; a script can spell it
 * otherwise (character codes, split, reversed), so the result of any unreviewed script that read
 * some is held for a reviewer (hold-unreviewed-personal-data). Scripts that read none, and direct
 * calls (no script, their answer tokenized as it is), are not held.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitDirectCall } from "@/lib/intake/direct";
import { submitRun } from "@/lib/intake/submit";
import { unreviewedScript } from "@/lib/runs/executor";
import { getRun, type RunView } from "@/lib/runs/service";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";

const EMAIL = "jane.doe@example.org";
const CARD = "4111 1111 1111 1111";
const REASON = `customer asked by mail ${EMAIL}, card ${CARD}`;
let ledger: LedgerRuntime;
let refundId: string;
/** An address in full-width forms, which reads as one (NFKC) though the plain detector does not see it. */
const FULLWIDTH = "dave＠example.com";
let fullwidthRefund: { id: string; invoiceId: string };
/** A card and an IBAN in the separators people also write them with (dots, hyphens), each on an invoice of its own. */
const LOOK_ALIKES = { dotted: "card 4111.1111.1111.1111 on file", hyphenated: "refund to DE89-3704-0044-0532-0130-00" } as const;
const lookAlikeRefunds: Record<keyof typeof LOOK_ALIKES, { id: string; invoiceId: string }> = {} as never;

/** The run once it has run (a held one waits for people, as the agent's get_run would). */
async function ran(runId: string): Promise<RunView> {
  for (let i = 0; i < 150; i++) {
    const view = await getRun(ledger.runtime, ledger.agent, { runId });
    if (!["submitted", "analyzed", "auto_approved", "queued", "running"].includes(view.status)) return view;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`run ${runId} did not finish running`);
}

async function script(code: string): Promise<{ view: RunView; flags: unknown }> {
  const submitted = await submitRun(ledger.runtime, ledger.agent, { code, purpose: "read a refund", language: "javascript" });
  expect(submitted.decision).toBe("allow");
  const view = await ran(submitted.runId);
  const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId } });
  return { view, flags: (row.execution as { flags: string[] }).flags };
}

beforeAll(async () => {
  ledger = await startLedgerRuntime("personal-data-bot", {
    ledger: (data) => {
      data.refunds[1]!.reason = REASON;
      refundId = data.refunds[1]!.id;
      // On an invoice of its own, so a read of that invoice's refunds reads no plain address.
      const other = data.refunds.find((r) => r.invoiceId !== data.refunds[1]!.invoiceId)!;
      other.reason = `write to ${FULLWIDTH}`;
      fullwidthRefund = { id: other.id, invoiceId: other.invoiceId };
      const used = new Set([data.refunds[1]!.invoiceId, other.invoiceId]);
      for (const [form, reason] of Object.entries(LOOK_ALIKES) as [keyof typeof LOOK_ALIKES, string][]) {
        const refund = data.refunds.find((r) => !used.has(r.invoiceId))!;
        used.add(refund.invoiceId);
        refund.reason = reason;
        lookAlikeRefunds[form] = { id: refund.id, invoiceId: refund.invoiceId };
      }
    },
  });
}, 90_000);
afterAll(() => ledger?.close());

const READ = `const { refunds } = await tools.ledger.listRefunds({ limit: 50 });
const s = refunds.find((r) => r.id === "REFUND").reason;`;

describe("a script no person reviewed that read personal data", () => {
  it.each([
    ["as character codes", "return { n: [...s].map((c) => c.charCodeAt(0)) };"],
    ["split at the @", `const i = s.indexOf("@"); return { a: s.slice(0, i), b: s.slice(i + 1) };`],
    ["reversed", `return { r: s.split("").reverse().join("") };`],
    ["as read (tokens would hide it)", "return { s };"],
  ])("attack: is held for a reviewer, whatever form it returns it in (%s)", async (_, tail) => {
    const { view, flags } = await script(`${READ.replace("REFUND", refundId)}\n${tail}`);
    expect(view.status).toBe("pending_release");
    expect(flags).toContain("unreviewed_personal_data");
    expect(view.result).toBeUndefined();
    expect(JSON.stringify(view)).not.toContain(EMAIL);
    expect(JSON.stringify(view)).not.toContain("jane");
    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect((run.releaseDecision as { reasons: { policyId: string }[] }).reasons.map((r) => r.policyId)).toContain("hold-unreviewed-personal-data");
  });
});

describe("personal data in look-alike forms", () => {
  it("attack: a full-width address is held as a plain one is", async () => {
    const { view, flags } = await script(`const { refunds } = await tools.ledger.listRefunds({ invoiceId: "${fullwidthRefund.invoiceId}", limit: 50 });
const s = refunds.find((r) => r.id === "${fullwidthRefund.id}").reason;
return { n: [...s].map((c) => c.charCodeAt(0)) };`);
    expect(flags).toContain("unreviewed_personal_data");
    expect(view.status).toBe("pending_release");
  });

  it.each(["dotted", "hyphenated"] as const)("attack: a %s card or IBAN is held as a spaced one is", async (form) => {
    const { id, invoiceId } = lookAlikeRefunds[form];
    const { view, flags } = await script(`const { refunds } = await tools.ledger.listRefunds({ invoiceId: "${invoiceId}", limit: 50 });
const s = refunds.find((r) => r.id === "${id}").reason;
return { n: [...s].map((c) => c.charCodeAt(0)) };`);
    expect(flags).toContain("unreviewed_personal_data");
    expect(view.status).toBe("pending_release");
  });
});

describe("a held script that failed", () => {
  it("attack: does not tell the agent how many rows each tool returned, which the script chose (a limit spelt from what it read)", async () => {
    const { view, flags } = await script(`${READ.replace("REFUND", refundId)}
await tools.ledger.listInvoices({ limit: s.charCodeAt(23) });
throw new Error("done");`);
    expect(flags).toContain("unreviewed_personal_data");
    expect(view.status).toBe("failed");
    expect(view).not.toHaveProperty("rows");
    expect(view).not.toHaveProperty("stats");
  });
});

describe("a plan preview (no person has reviewed its script yet) that read personal data", () => {
  const paid = () => ledger.runtime.broker.callTool("ledger", "listInvoices", { status: "paid", limit: 1 }, new AbortController().signal);

  it("attack: keeps the plan's arguments from the agent, where the script spelt what it read", async () => {
    const invoice = ((await paid()) as { invoices: { id: string }[] }).invoices[0]!.id;
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `${READ.replace("REFUND", refundId)}
await tools.ledger.issueRefund({ invoiceId: "${invoice}", amountMinor: 1, reason: [...s.slice(23, 43)].map((c) => c.charCodeAt(0)).join(" "), idempotencyKey: "pii-preview-1" });`,
      purpose: "a refund",
      language: "javascript",
    });
    const view = await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(view.status).toBe("pending_review");
    expect(view.plan).toEqual([expect.objectContaining({ tool: "issueRefund", arguments: "(withheld by release policy; reviewers see it in the console)" })]);
    expect(JSON.stringify(view)).not.toContain("106 97 110 101"); // "jane", as codes
  });

  it("attack: keeps a failed preview's text from the agent, where the script threw what it read", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `${READ.replace("REFUND", refundId)}
if (s) throw new Error([...s].map((c) => c.charCodeAt(0)).join(" "));
await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 1, reason: "never", idempotencyKey: "pii-preview-2" });`,
      purpose: "a refund",
      language: "javascript",
    });
    const view = await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(view).toMatchObject({ status: "failed", error: { code: "PREVIEW_FAILED" } });
    expect(view.error?.message).toMatch(
      /^The plan preview failed \(SCRIPT_ERROR\), so no reviewer was asked; release policy keeps the rest of its error text from the agent: A script no person reviewed read personal data/,
    );
    expect(JSON.stringify(view)).not.toContain("106 97 110 101"); // "jane", as codes
  });
});

describe("who counts as reviewed", () => {
  it("a script policy allowed is unreviewed, also when it calls a published skill (the code around it is the agent's) or is a run_skill call", () => {
    expect(unreviewedScript({ decision: "allow", kind: "script" })).toBe(true);
    // A run's skills are those a run_skill call or the agent's script calls: neither makes the rest of the script reviewed.
    const callsASkill = { decision: "allow", kind: "script", skills: [{ name: "countInvoices", version: 1, versionId: "v" }] } as const;
    expect(unreviewedScript(callsASkill)).toBe(true);
    expect(unreviewedScript({ decision: "escalate", kind: "script" })).toBe(false);
    expect(unreviewedScript({ decision: "allow", kind: "direct" })).toBe(false);
  });
});

describe("what is not held for it", () => {
  it("a script that read no personal data is handed its result", async () => {
    const { view, flags } = await script(`const { invoices } = await tools.ledger.listInvoices({ status: "paid", limit: 20 });
return invoices.length;`);
    expect(view).toMatchObject({ status: "succeeded", result: 20 });
    expect(flags).not.toContain("unreviewed_personal_data");
  });

  it("a direct call (no script to spell it otherwise) gets the answer with the personal data as tokens", async () => {
    const submitted = await submitDirectCall({ ...ledger.runtime, db: ledger.db.prisma }, ledger.agent, {
      server: "ledger",
      tool: "listRefunds",
      arguments: { limit: 50 },
    });
    const view = await ran(submitted.runId);
    expect(view.status).toBe("succeeded");
    const text = JSON.stringify(view.result);
    expect(text).toContain("customer asked by mail <EMAIL_");
    expect(text).not.toContain(EMAIL);
  });
});
