/**
 * The run page's argument table: every tool the analysis counts is listed, literal values are
 * shown as the values that run, and nothing that is computed (or may be replaced) passes for known.
 */
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ToolUsesTable } from "@/components/run/tool-uses";
import { analyzeScript } from "@/lib/intake/analyze";
import { toolUses } from "./tool-uses";

const uses = (code: string, language = "javascript") => toolUses(code, language).uses;

describe("toolUses", () => {
  it("lists each property of a call's object literal, with literal values as JSON and the rest as source", () => {
    const code = [
      `const id = "inv_0001";`,
      `await tools.ledger.issueRefund({ invoiceId: id, amount: "1.00", cents: -5, ok: true, tags: ["a", 1], meta: { n: null }, reason: \`goodwill\`, at: Date.now() });`,
    ].join("\n");
    expect(uses(code)).toEqual([
      {
        tool: "ledger.issueRefund",
        line: 2,
        column: 7,
        called: true,
        moreArguments: 0,
        arguments: [
          { name: "invoiceId", known: false, value: "id", note: null },
          { name: "amount", known: true, value: '"1.00"', note: null },
          { name: "cents", known: true, value: "-5", note: null },
          { name: "ok", known: true, value: "true", note: null },
          { name: "tags", known: true, value: '["a",1]', note: null },
          { name: "meta", known: true, value: '{"n":null}', note: null },
          { name: "reason", known: true, value: '"goodwill"', note: null },
          { name: "at", known: false, value: "Date.now()", note: null },
        ],
      },
    ]);
  });

  it("finds the argument at the end of a very long line", () => {
    const code = `const x = 1;${" ".repeat(400)}await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: "pay now" });`;
    expect(uses(code)).toMatchObject([
      { tool: "ledger.sendReminderEmail", line: 1, column: 419, arguments: [{ name: "invoiceId", value: '"inv_0003"' }, { name: "message" }] },
    ]);
  });

  it("does not call a value known when a later spread, a duplicate name or a computed key decides it", () => {
    const code = `const extra = {};\nawait tools.ledger.issueRefund({ amount: "1.00", invoiceId: "a", ...extra, invoiceId: "b", ["re" + "ason"]: "x", idempotencyKey });`;
    expect(uses(code)[0]!.arguments).toEqual([
      { name: "amount", known: false, value: '"1.00"', note: "a later …extra may replace it" },
      { name: "…extra", known: false, value: "extra", note: null },
      { name: "invoiceId", known: true, value: '"b"', note: null },
      { name: '["re" + "ason"]', known: false, value: '"x"', note: null },
      { name: "idempotencyKey", known: false, value: "idempotencyKey", note: null },
    ]);
  });

  it("shows escapes as the characters they make, and numbers JSON cannot hold as written", () => {
    const [use] = uses(`await tools.ledger.sendReminderEmail({ message: "a\\u202eb", big: 1e999, hex: 0x10 });`);
    expect(use!.arguments).toEqual([
      { name: "message", known: true, value: '"a\u202eb"', note: null },
      { name: "big", known: false, value: "1e999", note: null },
      { name: "hex", known: true, value: "16", note: null },
    ]);
  });

  it("lists calls without arguments, with a non-object argument, and tools taken as values", () => {
    const code = [
      `await tools.ledger.listInvoices();`,
      `const args = { limit: 2 };`,
      `await tools["ledger"]["listInvoices"](args);`,
      `const send = tools.ledger.sendReminderEmail;`,
      `await (tools.ledger.getInvoice as any)("inv_1");`,
    ].join("\n");
    expect(uses(code, "typescript").map(({ tool, line, called, arguments: a }) => ({ tool, line, called, a }))).toEqual([
      { tool: "ledger.listInvoices", line: 1, called: true, a: [] },
      { tool: "ledger.listInvoices", line: 3, called: true, a: [{ name: "(argument 1)", known: false, value: "args", note: null }] },
      { tool: "ledger.sendReminderEmail", line: 4, called: false, a: [] },
      { tool: "ledger.getInvoice", line: 5, called: true, a: [{ name: "(argument 1)", known: true, value: '"inv_1"', note: null }] },
    ]);
  });

  it("lists every tool of the analysis' capability set", () => {
    const scripts = [
      `for (const id of ["a", "b"]) await tools.ledger.getInvoice({ invoiceId: id });\nconst f = tools.ledger.listInvoices;\nreturn (await f({})).invoices;`,
      `import { z } from "zod";\nconst r = await tools.ledger.issueRefund({ invoiceId: "x", amount: "2", reason: "r", idempotencyKey: "kkkkkkkk" });\nreturn [r, await tools.crm?.findContact?.({ q: "x" })];`,
      `const t: number = 1;\nif (t) { await tools.ledger.sendReminderEmail({ invoiceId: "i", message: \`m\` } satisfies object); }`,
    ];
    for (const code of scripts) {
      const analysis = analyzeScript({ code, language: "typescript", tools: [], declarations: "", allowedPackages: ["zod"] });
      expect(analysis.capabilitySet.length).toBeGreaterThan(0);
      expect([...new Set(uses(code, "typescript").map((u) => u.tool))].sort()).toEqual(analysis.capabilitySet);
    }
  });

  it("caps what it lists and says how much is left out", () => {
    const many = toolUses(Array.from({ length: 205 }, (_, i) => `await tools.ledger.getInvoice({ invoiceId: "i${i}" });`).join("\n"), "javascript");
    expect(many.uses).toHaveLength(200);
    expect(many.omitted).toBe(5);
    const wide = toolUses(`await tools.ledger.getInvoice({ ${Array.from({ length: 60 }, (_, i) => `p${i}: ${i}`).join(", ")} });`, "javascript");
    expect(wide.uses[0]!.arguments).toHaveLength(50);
    expect(wide.uses[0]!.moreArguments).toBe(10);
  });
});

describe("ToolUsesTable", () => {
  it("marks a hidden character in an argument, and says which values are computed", () => {
    const code = `await tools.ledger.sendReminderEmail({ invoiceId: "inv_1\u202e", message: m });`;
    const html = renderToStaticMarkup(createElement(ToolUsesTable, { toolUses: toolUses(code, "javascript") }));
    expect(html).toContain('data-invisible="U+202E"');
    expect(html).not.toContain("\u202e");
    expect(html).toMatch(/data-argument="message" data-known="false".*computed at run time/s);
    expect(html).toMatch(/data-argument="invoiceId" data-known="true"/);
  });
});
