/**
 * Plans without a database: preview answers from templates and output schemas, money and its
 * totals, the digest, and the apply rule — the next planned write, with the same arguments once
 * placeholders stand for the real values; fewer writes are fine, more or others never.
 */
import { describe, expect, it } from "vitest";
import { previewHintsOf } from "@/lib/contracts/preview-hints";
import type { RunPlan } from "@/lib/contracts/run-columns";
import { MINOR_UNITS_UNSTATED, moneyOf, moneyTotals, planDigest, PlanFollower, previewAnswer, strayPlaceholder, unshownMoney, unstablePlan } from "./plan";

const REFUND_HINTS = previewHintsOf({
  "dev.airlock/preview": {
    refund: { id: "$placeholder", invoiceId: "$args/invoiceId", currency: "$args/currency", amountMinor: "$args/amountMinor" },
    replayed: false,
  },
  "dev.airlock/money": { amount: "/amountMinor", currency: "/currency", subject: "/invoiceId" },
});

function refundWrite(seq: number, invoiceId: string, amountMinor: number, currency = "EUR") {
  const args = { invoiceId, amountMinor, currency, idempotencyKey: `refund-${invoiceId}` };
  const answer = previewAnswer(seq, args, REFUND_HINTS, null);
  return { seq, server: "ledger", tool: "issueRefund", arguments: args, answer, money: moneyOf(REFUND_HINTS!.money, args, answer) };
}

function planOf(writes: RunPlan["writes"]): RunPlan {
  return { digest: planDigest(writes), writes };
}

describe("preview answers", () => {
  it("fill a declared template from the arguments, with placeholders for what only the call can know", () => {
    expect(refundWrite(3, "inv_0001", 1000).answer).toEqual({
      refund: { id: "@plan:3/refund/id", invoiceId: "inv_0001", currency: "EUR", amountMinor: 1000 },
      replayed: false,
    });
  });

  it("are built from the outputSchema otherwise: strings symbolic, the first enum value, a number's minimum", () => {
    const schema = {
      type: "object",
      properties: {
        id: { type: "string" },
        status: { type: "string", enum: ["queued", "sent"] },
        attempts: { type: "integer", minimum: 1 },
        tags: { type: "array", items: { type: "string" } },
        nested: { type: "object", properties: { "a/b": { type: "string" } } },
      },
    };
    expect(previewAnswer(2, {}, null, schema)).toEqual({ id: "@plan:2/id", status: "queued", attempts: 1, tags: [], nested: { "a/b": "@plan:2/nested/a~1b" } });
    expect(previewAnswer(4, {}, null, null)).toBe("@plan:4");
  });

  it("drop malformed money hints instead of trusting them in part", () => {
    expect(previewHintsOf({ "dev.airlock/money": { amount: "amountMinor" } })).toBeNull();
    expect(previewHintsOf({ "dev.airlock/money": { amount: "/a", extra: 1 } })).toBeNull();
    expect(previewHintsOf({ other: 1 })).toBeNull();
  });
});

describe("placeholders in a write's arguments", () => {
  it("are only those an earlier write answered with, wherever they sit; any other is stray", () => {
    const first = refundWrite(1, "inv_0001", 100);
    expect(strayPlaceholder({ note: { refundId: "@plan:1/refund/id" }, ids: ["@plan:1/refund/id"] }, [first])).toBeNull();
    // Fields the answer fills from the call's own arguments are not symbolic: a script cannot make them so.
    expect(strayPlaceholder({ invoiceId: "@plan:1/refund/invoiceId" }, [first])).toBe("@plan:1/refund/invoiceId");
    expect(strayPlaceholder({ amountMinor: "@plan:1/refund/amountMinor" }, [first])).toBe("@plan:1/refund/amountMinor");
    expect(strayPlaceholder({ refundId: "@plan:2/refund/id" }, [first])).toBe("@plan:2/refund/id");
    expect(strayPlaceholder({ refundId: "@plan:1/refund/id" }, [])).toBe("@plan:1/refund/id");
    // However deep it sits (resolve replaces at any depth).
    let deep: Record<string, unknown> = { amountMinor: "@plan:1/refund/amountMinor" };
    for (let i = 0; i < 20; i++) deep = { nested: deep };
    expect(strayPlaceholder(deep as never, [first])).toBe("@plan:1/refund/amountMinor");
    // Only a whole string stands for a value; text around one is plain text, matched as it is.
    expect(strayPlaceholder({ message: "see @plan:9/x" }, [])).toBeNull();
  });
});

describe("money", () => {
  it("reads amount, currency and subject from the arguments in the currency's minor units", () => {
    expect(refundWrite(1, "inv_0001", 1050).money).toEqual({ amount: "10.50", currency: "EUR", subject: "inv_0001" });
    expect(refundWrite(1, "inv_0009", 1050, "JPY").money).toEqual({ amount: "1050", currency: "JPY", subject: "inv_0009" });
  });

  it("totals per currency with the subjects, exactly", () => {
    const plan = planOf([
      refundWrite(1, "inv_0001", 1000),
      refundWrite(2, "inv_0007", 1000),
      refundWrite(3, "inv_0012", 1001),
      refundWrite(4, "inv_0020", 500, "JPY"),
    ]);
    expect(moneyTotals(plan)).toEqual([
      { currency: "EUR", total: "30.01", count: 3, negative: 0, subjects: ["inv_0001", "inv_0007", "inv_0012"] },
      { currency: "JPY", total: "500", count: 1, negative: 0, subjects: ["inv_0020"] },
    ]);
  });

  it("minor units of a currency the write does not state are shown as they are, not converted by a guess", () => {
    const hint = { amount: "/amountMinor", currency: "/currency", subject: "/invoiceId", unit: "minor", from: "arguments" } as const;
    // A JPY invoice refunded without naming the currency: ¥302,000, which a guess of 2 decimals showed as 3,020.00.
    expect(moneyOf(hint, { amountMinor: 302000, invoiceId: "inv_0006" }, {})).toEqual({
      amount: "302000",
      currency: MINOR_UNITS_UNSTATED,
      subject: "inv_0006",
    });
    expect(moneyOf(hint, { amountMinor: 302000, currency: "JPY", invoiceId: "inv_0006" }, {})).toEqual({
      amount: "302000",
      currency: "JPY",
      subject: "inv_0006",
    });
    expect(moneyOf(hint, { amountMinor: 1050, currency: "KWD" }, {})).toEqual({ amount: "1.050", currency: "KWD", subject: null });
  });

  it("an amount the plan cannot show exactly is not money it shows: a fraction of a minor unit, or past 2^53", () => {
    const hint = { amount: "/amount", currency: "/currency", unit: "minor", from: "arguments" } as const;
    for (const amount of [0.004, 1.5, 1e23]) {
      const args = { amount, currency: "USD" };
      expect(moneyOf(hint, args, {}), String(amount)).toBeNull();
      expect(unshownMoney(hint, null, args, {})).toMatch(/^the amount it moves \(argument \/amount\) is [0-9.e+]+, not a whole number of minor units/);
    }
  });

  it("an amount the plan cannot show, in the arguments or in the preview's answer, is named: such a write is not planned", () => {
    const fromArgs = { amount: "/amountMinor", unit: "minor", from: "arguments" } as const;
    const fromAnswer = { amount: "/charge/amount", unit: "minor", from: "answer" } as const;
    const placeholder = "@plan:1/refund/amount";
    expect(unshownMoney(fromArgs, moneyOf(fromArgs, { amountMinor: placeholder }, {}), { amountMinor: placeholder }, {})).toBe(
      `the amount it moves (argument /amountMinor) is "${placeholder}", not a number, so no reviewer could see how much money it moves. Pass the amount itself: a value read before the write, not one an earlier write will return.`,
    );
    // A charge whose preview answer takes its amount from a placeholder argument: left out of the totals just the same.
    const answer = { charge: { amount: placeholder } };
    expect(unshownMoney(fromAnswer, moneyOf(fromAnswer, { amount: placeholder }, answer), { amount: placeholder }, answer)).toMatch(
      /^the amount it moves \(its answer's \/charge\/amount\) is "@plan:1\/refund\/amount", not a number/,
    );
    expect(unshownMoney(fromAnswer, moneyOf(fromAnswer, {}, {}), {}, {})).toMatch(/is nothing, not a number/);
    // Shown amounts, and tools that move no money, pass.
    expect(unshownMoney(fromArgs, moneyOf(fromArgs, { amountMinor: 150 }, {}), { amountMinor: 150 }, {})).toBeNull();
    expect(unshownMoney(fromAnswer, moneyOf(fromAnswer, {}, { charge: { amount: 150 } }), {}, { charge: { amount: 150 } })).toBeNull();
    expect(unshownMoney(null, null, { amountMinor: placeholder }, {})).toBeNull();
  });

  it("adds each amount by its size and counts the negative ones: 3,000.00 and -2,999.99 never show as 0.01 moving", () => {
    const plan = planOf([refundWrite(1, "inv_0026", 300_000, "USD"), refundWrite(2, "inv_0026", -299_999, "USD")]);
    expect(moneyTotals(plan)).toEqual([{ currency: "USD", total: "5999.99", count: 2, negative: 1, subjects: ["inv_0026"] }]);
  });
});

describe("following a plan", () => {
  it("allows the planned writes in order, with the same arguments whatever their key order", () => {
    const follower = new PlanFollower(planOf([refundWrite(1, "inv_0001", 100), refundWrite(2, "inv_0002", 200)]));
    expect(follower.check("ledger", "issueRefund", { idempotencyKey: "refund-inv_0001", currency: "EUR", amountMinor: 100, invoiceId: "inv_0001" })).toEqual({
      ok: true,
      seq: 1,
    });
    expect(follower.check("ledger", "issueRefund", refundWrite(2, "inv_0002", 200).arguments)).toEqual({ ok: true, seq: 2 });
  });

  it("refuses another amount, another tool, and a write past the end; fewer writes need no check", () => {
    const plan = planOf([refundWrite(1, "inv_0001", 100)]);
    expect(new PlanFollower(plan).check("ledger", "issueRefund", refundWrite(1, "inv_0001", 101).arguments)).toMatchObject({ ok: false });
    expect(new PlanFollower(plan).check("ledger", "sendReminderEmail", { invoiceId: "inv_0001" })).toMatchObject({
      ok: false,
      reason: "write 1 was planned as ledger.issueRefund, not ledger.sendReminderEmail",
    });
    const follower = new PlanFollower(plan);
    expect(follower.check("ledger", "issueRefund", refundWrite(1, "inv_0001", 100).arguments).ok).toBe(true);
    expect(follower.check("ledger", "issueRefund", refundWrite(1, "inv_0001", 100).arguments)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("has 1"),
    });
  });

  it("matches a placeholder argument to the value the real planned write returned, and nothing else", () => {
    const create = { seq: 1, server: "crm", tool: "createTicket", arguments: { title: "t" }, answer: { id: "@plan:1/id" }, money: null };
    const send = { seq: 2, server: "crm", tool: "notify", arguments: { ticketId: "@plan:1/id" }, answer: null, money: null };
    const follower = new PlanFollower(planOf([create, send]));
    expect(follower.check("crm", "createTicket", { title: "t" })).toEqual({ ok: true, seq: 1 });
    follower.made(1, { id: "T-991" });
    expect(follower.check("crm", "notify", { ticketId: "T-000" })).toMatchObject({ ok: false });
    expect(follower.check("crm", "notify", { ticketId: "T-991" })).toEqual({ ok: true, seq: 2 });
  });

  it("binds the order, tools and arguments in the digest", () => {
    const a = refundWrite(1, "inv_0001", 100);
    const b = refundWrite(2, "inv_0002", 100);
    expect(planDigest([a, b])).not.toBe(planDigest([b, a]));
    expect(planDigest([a])).not.toBe(planDigest([refundWrite(1, "inv_0001", 101)]));
    const sameWriteOtherAnswer = { ...a, answer: "ignored", money: null };
    expect(planDigest([a])).toBe(planDigest([sameWriteOtherAnswer]));
  });
});

describe("two previews of one script", () => {
  const keyed = (seq: number, key: string) => ({
    ...refundWrite(seq, "inv_0001", 100),
    arguments: { ...refundWrite(seq, "inv_0001", 100).arguments, idempotencyKey: key },
  });

  it("that plan the same writes agree", () => {
    expect(unstablePlan([refundWrite(2, "inv_0001", 100)], [refundWrite(2, "inv_0001", 100)])).toBeNull();
    expect(unstablePlan([], [])).toBeNull();
  });

  it("that differ are told apart at the first argument that differs, with both values", () => {
    expect(
      unstablePlan([refundWrite(1, "inv_0002", 5), keyed(2, "key-1796475458299")], [refundWrite(1, "inv_0002", 5), keyed(2, "key-1796475458301")]),
    ).toMatch(
      /^PLAN_UNSTABLE: two previews of the same script planned different writes \(write 2 \(ledger\.issueRefund\) has "key-1796475458299" at \/idempotencyKey in one and "key-1796475458301" in the other\)\. .*Date\.now\(\) or Math\.random\(\)\.$/,
    );
    const nested = (note: string) => ({ ...refundWrite(1, "inv_0001", 1), arguments: { meta: { tags: ["a", note] } } });
    expect(unstablePlan([nested("x")], [nested("y")])).toContain('has "x" at /meta/tags/1 in one and "y" in the other');
    expect(unstablePlan([refundWrite(1, "inv_0001", 1)], [refundWrite(1, "inv_0001", 1), refundWrite(2, "inv_0002", 1)])).toContain(
      "the first planned 1 write(s), the second 2",
    );
    expect(unstablePlan([refundWrite(1, "inv_0001", 1)], [refundWrite(3, "inv_0001", 1)])).toContain(
      "write 1 (ledger.issueRefund) came after a different number of calls",
    );
  });
});
