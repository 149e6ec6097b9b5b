/**
 * Personal data as tokens: the matching itself, then the whole loop on real parts (the demo ledger
 * with its piiFields, a strict sandbox, the shipped policies, two reviewers, PostgreSQL):
 * - listCustomers reaches the agent with <NAME_n>/<EMAIL_n> and no address or name;
 * - a later script of the same conversation passes a token as sendReminderEmail's `to`: the plan
 *   the agent sees keeps the token, and the upstream gets the real address;
 * - a token passed to a tool that is not classed pii (exfiltration) fails the run CAPABILITY_DENIED
 *   before the call; a token of another conversation is not restored.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { submitRun } from "@/lib/intake/submit";
import { decideRun, reviewBinding } from "@/lib/review/service";
import { reviewedToEnd } from "@/lib/testing/review";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { purgeExpired } from "@/lib/audit/retention";
import { RETENTION_DEFAULT_DAYS } from "@/lib/audit/retention-windows";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { MarkedValues, assignTokens, countRunTokens, personalData, runTokens, tokenized } from "./pii-tokens";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import { getRun, type RunView } from "./service";

describe("matching", () => {
  it("finds marked values as whole words (a name inside a sentence), detected ones anywhere, and replaces the longest first", async () => {
    const marked = new MarkedValues();
    marked.note(
      { "customers[].name": "NAME", "customers[].email": "EMAIL" },
      {
        customers: [
          { name: "Ada Lovelace", email: "ada@example.org" },
          { name: "Ada", email: "x@example.org" },
        ],
      },
    );
    const found = await personalData([{ note: "Dear Ada Lovelace, call +44 20 7946 0958", other: "Adam is not Ada" }], marked);
    expect(found).toEqual(
      expect.arrayContaining([
        { kind: "NAME", value: "Ada Lovelace" },
        { kind: "NAME", value: "Ada" },
        { kind: "PHONE", value: "+44 20 7946 0958" },
      ]),
    );
    const tokens = [
      { token: "<NAME_1>", value: "Ada Lovelace" },
      { token: "<NAME_2>", value: "Ada" },
      { token: "<EMAIL_1>", value: "ada@example.org" },
    ];
    expect(tokenized({ a: "Dear Ada Lovelace (ada@example.org)", b: ["Adam is not Ada."] }, tokens)).toEqual({
      a: "Dear <NAME_1> (<EMAIL_1>)",
      b: ["Adam is not <NAME_2>."],
    });
  });
});

describe("matching, as an attacker formats it", () => {
  const tokens = [
    { token: "<EMAIL_1>", value: "alice@example.com" },
    { token: "<NAME_1>", value: "Alice Smith" },
    { token: "<IBAN_1>", value: "DE89370400440532013000" },
    { token: "<PHONE_1>", value: "+44 20 7946 0958" },
  ];

  it("finds values behind quotes, punctuation and signs, and in object keys", () => {
    // console.log(customer) prints strings in single quotes; Object.groupBy keys rows by a value.
    expect(tokenized("{ email: 'alice@example.com', name: 'Alice Smith' }", tokens)).toBe("{ email: '<EMAIL_1>', name: '<NAME_1>' }");
    expect(tokenized(["acct-DE89370400440532013000", "call+44 20 7946 0958", "Alice Smith's balance"], tokens)).toEqual([
      "acct-<IBAN_1>",
      "call<PHONE_1>",
      "<NAME_1>'s balance",
    ]);
    expect(tokenized({ "alice@example.com": [{ n: 1 }] }, tokens)).toEqual({ "<EMAIL_1>": [{ n: 1 }] });
    // Glued to letters or digits it is another word, left alone.
    expect(tokenized(["malice@example.com.au", "Alice Smithson"], tokens)).toEqual(["malice@example.com.au", "Alice Smithson"]);
  });

  it("stays linear on pathological text (a megabyte of punctuation and repeated first words)", () => {
    const t0 = performance.now();
    tokenized(["a" + ".".repeat(1_000_000) + "a", "Alice ".repeat(100_000)], tokens);
    expect(performance.now() - t0).toBeLessThan(2_000);
  });

  it("stays linear when thousands of values share their first word (every +1 phone number starts with 1)", () => {
    const phones = Array.from({ length: 20_000 }, (_, i) => ({ token: `<PHONE_${i + 1}>`, value: `+1 415 555 ${String(10_000 + i).slice(1)}` }));
    const text = phones.map((p, i) => `user${i}@example.com ${p.value}`).join(" ");
    const t0 = performance.now();
    const out = tokenized(text, phones);
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(out.match(/<PHONE_\d+>/g)).toHaveLength(20_000);
    expect(out.startsWith("user0@example.com <PHONE_1> user1@example.com <PHONE_2> ")).toBe(true);
  });

  it("collects marked values from object keys too", async () => {
    const marked = new MarkedValues();
    marked.note({ "customers[].email": "EMAIL" }, { customers: [{ email: " bob@example.org " }] });
    expect(await personalData([{ "bob@example.org": 3 }], marked)).toEqual([{ kind: "EMAIL", value: "bob@example.org" }]);
  });
});

describe("the tokens loop", () => {
  let ledger: LedgerRuntime;
  const reviewers: Extract<Actor, { type: "user" }>[] = [];
  const conversation = { model: "m", prompt: "remind overdue customers", conversationId: "conv-remind" };

  const finished = (runId: string): Promise<RunView> => reviewedToEnd(ledger, reviewers, runId);

  /**
   * A preview of personal data, once it ended: what the agent sees then (`held`: still previewing,
   * since when it ended is the script's to choose) and after twice its time limit, one per preview run (`shown`, the clock
   * moved past it). Its run row is `row`.
   */
  async function afterPreview(runId: string): Promise<{ held: RunView; shown: RunView; row: { status: string } }> {
    let row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    for (let i = 0; i < 200 && row.status === "previewing"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    }
    const held = await getRun(ledger.runtime, ledger.agent, { runId });
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(row.createdAt.getTime() + 2 * RUN_LIMIT_DEFAULTS.timeoutMs + 6_000);
      return { held, shown: await getRun(ledger.runtime, ledger.agent, { runId }), row };
    } finally {
      vi.useRealTimers();
    }
  }

  beforeAll(async () => {
    ledger = await startLedgerRuntime("tokens-bot");
    const system: Actor = { type: "system", name: "test" };
    for (const email of ["rita@example.com", "rob@example.com"]) {
      const made = await ledger.db.prisma.$transaction((tx) => createUser(tx, system, { email, role: "reviewer" }));
      reviewers.push({ type: "user", id: made.id, email, role: "reviewer" });
    }
  }, 90_000);
  afterAll(() => ledger?.close());

  let customers: { id: string; name: string; email: string }[];
  let firstEmail: string;

  it("listCustomers reaches the agent as tokens: no address, no name", async () => {
    // The ledger's data before any write (its default seed).
    const state = generateLedgerData();
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customers } = await tools.ledger.listCustomers({ limit: 5 });
console.log("first is", customers[0].name);
return customers.map((c) => ({ id: c.id, name: c.name, email: c.email }));`,
      purpose: "list customers",
      language: "javascript",
      provenance: conversation,
    });
    const view = await finished(submitted.runId);
    expect(view.status).toBe("succeeded");
    customers = state.customers.slice(0, 5);
    const text = JSON.stringify(view);
    for (const c of customers) {
      expect(text).not.toContain(c.email);
      expect(text).not.toContain(c.name);
    }
    const rows = view.result as { id: string; name: string; email: string }[];
    expect(rows.map((r) => r.id)).toEqual(customers.map((c) => c.id));
    expect(rows[0]).toEqual({ id: customers[0]!.id, name: expect.stringMatching(/^<NAME_\d+>$/), email: expect.stringMatching(/^<EMAIL_\d+>$/) });
    expect(view.logs?.[0]?.text).toBe(`first is ${rows[0]!.name}`);
    // Stable within the conversation: the same customer, the same token.
    expect(new Set(rows.map((r) => r.email)).size).toBe(5);
    firstEmail = rows[0]!.email;
    // The audit log keeps the real values.
    const stored = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId } });
    expect(JSON.stringify(stored.result)).toContain(customers[0]!.email);
  });

  it("a token passed as sendReminderEmail's `to` reaches the upstream as the real address; the agent's plan keeps the token", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const r = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", to: ${JSON.stringify(firstEmail)}, message: "Please pay" });\nreturn r;`,
      purpose: "remind",
      language: "javascript",
      provenance: conversation,
    });
    const planned = await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 20 });
    expect(planned.plan?.[0]?.arguments).toMatchObject({ to: firstEmail });
    const view = await finished(submitted.runId);
    expect(view.status).toBe("succeeded");
    expect(view.result).toMatchObject({ to: firstEmail });
    const outbox = (JSON.parse(readFileSync(ledger.stateFile, "utf8")) as { outbox: { to: string; message: string }[] }).outbox;
    expect(outbox.at(-1)).toMatchObject({ to: customers[0]!.email, message: "Please pay" });
    // The tool call on record is what the upstream got.
    const call = await ledger.db.prisma.runToolCall.findFirstOrThrow({ where: { runId: submitted.runId, phase: "apply" } });
    expect(call.args).toMatchObject({ to: customers[0]!.email });
  });

  it("a token passed to a tool that is not classed pii fails the run CAPABILITY_DENIED, and the call is not made", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const page = await tools.ledger.listInvoices({ customerId: ${JSON.stringify(firstEmail)}, limit: 1 });\nreturn page.invoices.length;`,
      purpose: "exfiltrate",
      language: "javascript",
      provenance: conversation,
    });
    const view = await finished(submitted.runId);
    expect(view).toMatchObject({
      status: "failed",
      error: { code: "CAPABILITY_DENIED", message: expect.stringContaining(`${firstEmail} passed to ledger.listInvoices`) },
    });
    const calls = await ledger.db.prisma.runToolCall.findMany({ where: { runId: submitted.runId } });
    expect(calls).toEqual([expect.objectContaining({ tool: "listInvoices", outcome: "refused" })]);
  });

  it("a token of another conversation is not restored: the pii tool is not called with it", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `try { await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", to: ${JSON.stringify(firstEmail)} }); return "sent"; } catch (e) { return String(e.message); }`,
      purpose: "remind from elsewhere",
      language: "javascript",
      provenance: { ...conversation, conversationId: "another" },
    });
    const view = await finished(submitted.runId);
    // Refused in the preview (the script saw the refusal): no write was planned; the run then stops before the unplanned write.
    expect(view.plan).toEqual([]);
    const preview = await ledger.db.prisma.runToolCall.findMany({ where: { runId: submitted.runId, phase: "preview" } });
    // Refused in both runs of the preview (./preview.ts previews twice).
    const refused = expect.objectContaining({
      tool: "sendReminderEmail",
      outcome: "refused",
      error: expect.stringContaining("not a token of this conversation"),
    });
    expect(preview).toEqual([refused, refused]);
    expect(view.error).toMatchObject({ code: "PLAN_DIVERGED" });
    const outbox = (JSON.parse(readFileSync(ledger.stateFile, "utf8")) as { outbox: unknown[] }).outbox;
    expect(outbox).toHaveLength(1); // only the reminder of the conversation that owns the token
  });
  it("a token is restored only at a field marked for it: inside the message it stays text, and a secret in an upstream's error is redacted", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: [
        `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0004", to: ${JSON.stringify(firstEmail)}, message: "about ${firstEmail}" });`,
        `let failed = null;`,
        // A read: a write with a key in its arguments is never planned (./gate.ts unreviewableArguments).
        // Built at run time: a key written in the script is refused at intake (lib/intake/credentials.ts).
        `try { await tools.ledger.getCustomer({ customerId: ["sk", "test", "4eC39HqLyjWDarjtT1zdp7dc"].join("_") }); } catch (e) { failed = e.message; }`,
        `checks.allowPartial("the lookup is expected to fail");`,
        `return { sent, failed };`,
      ].join("\n"),
      purpose: "remind with a token in the message",
      language: "javascript",
      provenance: conversation,
    });
    const view = await finished(submitted.runId);
    expect(view.status).toBe("succeeded");
    const outbox = (JSON.parse(readFileSync(ledger.stateFile, "utf8")) as { outbox: { to: string; message: string }[] }).outbox;
    expect(outbox.at(-1)).toMatchObject({ to: customers[0]!.email, message: `about ${firstEmail}` });
    // The upstream echoed the bad customer id (a pasted key) in its error: the script, the record and the agent get it redacted.
    expect((view.result as { failed: string }).failed).toContain("[REDACTED:stripe_key]");
    const calls = await ledger.db.prisma.runToolCall.findMany({ where: { runId: submitted.runId, phase: "apply" }, orderBy: { seq: "asc" } });
    expect(calls[1]!.error).toContain("[REDACTED:stripe_key]");
    expect(JSON.stringify(calls, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value))).not.toContain("sk_test_4eC");
  });

  it("a plan over personal data is kept from the agent until reviewers approved and it ran: no encoding gets it out early", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customers } = await tools.ledger.listCustomers({ limit: 2 });\nconst blob = customers.map((c) => c.name).join(";");\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0005", message: "ref " + [...blob].map((c) => c.charCodeAt(0)).join(",") + " " + blob.toUpperCase() });\nreturn "sent";`,
      purpose: "remind with a reference",
      language: "javascript",
      provenance: conversation,
    });
    const { held, shown: pending, row } = await afterPreview(submitted.runId);
    // Ended, and still previewing to the agent: when it ended is the script's to choose.
    expect(row.status).toBe("pending_review");
    expect(held).toMatchObject({ status: "previewing" });
    expect(pending.status).toBe("pending_review");
    // Not even its shape (how many writes, which tools): a script could spell what it read in it.
    expect(pending).not.toHaveProperty("plan");
    const name = generateLedgerData().customers[0]!.name;
    expect(JSON.stringify(pending)).not.toContain(name.toUpperCase());
    expect(JSON.stringify(pending)).not.toContain([...name].map((c) => c.charCodeAt(0)).join(","));
    // Approved by both reviewers and run: the plan they approved reaches the agent.
    const done = await finished(submitted.runId);
    expect(done.status).toBe("succeeded");
    expect(done.plan![0]!.arguments).toMatchObject({ invoiceId: "inv_0005", message: expect.stringContaining(name.toUpperCase()) });
  });

  it("attack: a reviewer's approval does not show while the preview of personal data still shows as previewing, or it would tell when the preview ended", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customers } = await tools.ledger.listCustomers({ limit: 1 });\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0005", message: "hello " + customers.length });\nreturn "sent";`,
      purpose: "remind one customer",
      language: "javascript",
      provenance: conversation,
    });
    let row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId } });
    for (let i = 0; i < 200 && row.status === "previewing"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId } });
    }
    expect(row.status).toBe("pending_review");
    await decideRun({ db: ledger.db.prisma, startExecution: () => undefined }, reviewers[0]!, {
      runId: row.id,
      verdict: "approve",
      comment: "looks fine",
      seen: reviewBinding(row),
    });
    const held = await getRun(ledger.runtime, ledger.agent, { runId: row.id });
    expect(held.status).toBe("previewing");
    expect(held.approvals).toEqual({ approvedBy: [], required: 2 });
    expect(held.comments).toEqual([]);
    // Past the time limits of both preview runs, it shows as it is.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(row.createdAt.getTime() + 2 * RUN_LIMIT_DEFAULTS.timeoutMs + 6_000);
      const shown = await getRun(ledger.runtime, ledger.agent, { runId: row.id });
      expect(shown).toMatchObject({ status: "pending_review", approvals: { approvedBy: [reviewers[0]!.email], required: 2 } });
      expect(shown.comments).toEqual([expect.objectContaining({ verdict: "approve", comment: "looks fine" })]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a plan preview that read personal data and failed keeps its error text from the agent, encoded or not: no reviewer approved those reads", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customer } = await tools.ledger.getCustomer({ customerId: "cus_001" });\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0005", to: customer.email });\nthrow new Error("could not remind " + customer.email + " " + Buffer.from(customer.name).toString("base64"));`,
      purpose: "fail in the preview",
      language: "javascript",
      provenance: conversation,
    });
    const { held, shown: view, row } = await afterPreview(submitted.runId);
    expect(row.status).toBe("failed");
    expect(held).toMatchObject({ status: "previewing" });
    expect(held).not.toHaveProperty("error");
    expect(view.error).toMatchObject({
      code: "PREVIEW_FAILED",
      message: expect.stringMatching(/failed \(SCRIPT_ERROR\).*withheld: the preview read regulated data/),
    });
    const first = generateLedgerData().customers[0]!;
    const seen = JSON.stringify(view);
    expect(seen).not.toContain(first.email);
    expect(seen).not.toContain(Buffer.from(first.name).toString("base64"));
    expect(seen).not.toMatch(/<EMAIL_\d+>/);
    // Reviewers and the audit log keep the preview's own words.
    const stored = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId }, select: { error: true } });
    expect(JSON.stringify(stored.error)).toContain(Buffer.from(first.name).toString("base64"));
  });

  it("attack: a failed preview of personal data does not say which write failed: the script chose how many it made first, to count out what it read", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customer } = await tools.ledger.getCustomer({ customerId: "cus_001" });
const n = customer.email.charCodeAt(0) % 5 + 2;
for (let i = 1; i < n; i++) await tools.ledger.sendReminderEmail({ invoiceId: "inv_0005" });
await tools.ledger.sendReminderEmail({ invoiceId: "@plan:999/x" });
return n;`,
      purpose: "count out a letter",
      language: "javascript",
      provenance: conversation,
    });
    const { shown: view } = await afterPreview(submitted.runId);
    expect(view.error).toMatchObject({
      code: "PREVIEW_FAILED",
      message: expect.stringMatching(/^The plan preview failed \(PLAN_UNREVIEWABLE\), so no reviewer/),
    });
    expect(view.error!.message).not.toMatch(/write \d|sendReminderEmail/);
    expect(view).not.toHaveProperty("plan");
    // Reviewers and the audit log keep which write it was.
    const stored = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId }, select: { error: true } });
    expect(JSON.stringify(stored.error)).toMatch(/PLAN_UNREVIEWABLE: write [2-6] \(ledger\.sendReminderEmail\)/);
  });

  it("attack: a preview of personal data that takes as long as a letter it read says tells the agent nothing by when it ends", async () => {
    // The preview waits 200 ms per step of a letter of an address, then makes one write.
    const started = Date.now();
    const submitted = await submitRun(
      ledger.runtime,
      ledger.agent,
      {
        code: `const { customer } = await tools.ledger.getCustomer({ customerId: "cus_001" });
await new Promise((resolve) => setTimeout(resolve, (customer.email.charCodeAt(0) % 5) * 200));
await tools.ledger.sendReminderEmail({ invoiceId: "inv_0005" });
return 1;`,
        purpose: "time a letter",
        language: "javascript",
        provenance: conversation,
      },
      { wait: { seconds: 3 } },
    );
    // submit_run answers at once (no short wait would see the end), and get_run's wait ends as for a preview still running.
    expect(submitted.status).toBe("previewing");
    expect(Date.now() - started).toBeLessThan(3_000);
    const { held, row } = await afterPreview(submitted.runId);
    expect(row.status).toBe("pending_review");
    expect(held).toMatchObject({ status: "previewing" });
    const waited = Date.now();
    expect(await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 2 })).toMatchObject({ status: "previewing" });
    expect(Date.now() - waited).toBeGreaterThanOrEqual(2_000);
  });

  it("a value retention deleted is kept again when a later run shows it, so its token keeps hiding it", async () => {
    const scope = `${ledger.agent.id}/conv-remind`;
    const n = Number(/\d+/.exec(firstEmail)![0]);
    await ledger.db.prisma.piiToken.updateMany({ where: { scope, kind: "EMAIL", n }, data: { value: null, purgedAt: new Date() } });
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { customers } = await tools.ledger.listCustomers({ limit: 2 });\nreturn customers.map((c) => c.email);`,
      purpose: "list emails again",
      language: "javascript",
      provenance: conversation,
    });
    const view = await finished(submitted.runId);
    expect(view.result).toEqual([firstEmail, expect.stringMatching(/^<EMAIL_\d+>$/)]);
    expect(JSON.stringify(view)).not.toContain(customers[0]!.email);
  });

  it("a run's token uses accumulate (its plan's, then its result's, each once); the next run gets the same tokens", async () => {
    const newRun = (key: string) =>
      ledger.db.prisma.run.create({
        data: { agentId: ledger.agent.id, language: "javascript", code: "return 1;", codeSha256: "x", purpose: "uses", inputsDigest: "x", requestDigest: key },
      });
    const scope = `${ledger.agent.id}/conv-uses`;
    const ann = { kind: "EMAIL", value: "ann@example.org" } as const;
    const bo = { kind: "NAME", value: "Bo Lind" } as const;
    const cy = { kind: "PHONE", value: "+44 20 7946 0001" } as const;
    const first = await newRun("uses-1");
    await ledger.db.prisma.$transaction((tx) => assignTokens(tx, scope, first.id, [ann, bo, ann]));
    await ledger.db.prisma.$transaction((tx) => assignTokens(tx, scope, first.id, [bo, cy]));
    const used = await runTokens(ledger.db.prisma, first.id);
    expect(used.map((t) => t.value).sort()).toEqual([cy.value, bo.value, ann.value].sort());
    expect(new Set(used.map((t) => t.token)).size).toBe(3);
    expect(await countRunTokens(ledger.db.prisma, first.id)).toBe(3);

    const second = await newRun("uses-2");
    await ledger.db.prisma.$transaction((tx) => assignTokens(tx, scope, second.id, [ann]));
    expect(await runTokens(ledger.db.prisma, second.id)).toEqual(used.filter((t) => t.value === ann.value));
    expect(await countRunTokens(ledger.db.prisma, second.id)).toBe(1);
  });

  it("retention deletes a token's value only after its pii window, and never while a run still shows content that needs it", async () => {
    const scope = `${ledger.agent.id}/conv-remind`;
    const old = new Date(Date.now() - 40 * 86_400_000);
    await ledger.db.prisma.piiToken.updateMany({ where: { scope }, data: { lastUsedAt: old } });
    const orphan = await ledger.db.prisma.piiToken.create({
      data: { scope: "someone/else", kind: "EMAIL", n: 1, valueDigest: "d".repeat(64), value: "gone@example.org", lastUsedAt: old },
    });
    const summary = await purgeExpired(ledger.db.prisma, { asOf: new Date(), days: RETENTION_DEFAULT_DAYS });
    expect(summary.tokensPurged).toBe(1);
    expect(await ledger.db.prisma.piiToken.findUniqueOrThrow({ where: { id: orphan.id } })).toMatchObject({ value: null, purgedAt: expect.any(Date) });
    // The conversation's runs still hold their results: their tokens keep their values.
    expect(await ledger.db.prisma.piiToken.count({ where: { scope, value: null } })).toBe(0);
    expect(await ledger.db.prisma.auditEvent.count({ where: { action: "pii_tokens.purged" } })).toBe(1);
  });
});
