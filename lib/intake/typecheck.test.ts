/**
 * The type-check program is clean outside the script: the contract and the generated tool
 * declarations declare each name once, so no conflict (such as two `inputs`) is silently dropped.
 * The sandbox's bootstrap implements exactly the `inputs` methods the contract declares.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateDeclarations } from "@/lib/broker/declarations";
import type { ToolInfo } from "@/lib/broker/types";
import { SCRIPT_INPUT_METHODS, SCRIPT_INPUTS_DECLARATION } from "@/lib/contracts/script-contract";
import { contractDiagnostics, parseScript, typeCheckScript } from "./typecheck";

const tool = (name: string, inputSchema: Record<string, unknown>, outputSchema: Record<string, unknown> | null): ToolInfo => ({
  server: "ledger",
  name,
  description: `${name} does things`,
  annotations: { readOnlyHint: true },
  dataClass: "internal",
  quarantined: false,
  quarantineReason: null,
  hash: "x",
  inputSchema,
  outputSchema,
  preview: null,
  piiFields: {},
});

const TOOLS = [
  tool(
    "listRefunds",
    { type: "object", properties: { invoiceId: { type: "string" }, limit: { type: "integer" } } },
    { type: "object", properties: { refunds: { type: "array", items: { type: "object" } } }, required: ["refunds"] },
  ),
  tool("inputs", { type: "object", properties: {} }, null),
];

describe("the type-check program", () => {
  it("reports no diagnostic outside the script, with real generated declarations", () => {
    expect(contractDiagnostics(generateDeclarations(TOOLS))).toEqual([]);
  });

  it("would report a second declaration of inputs (the check can fail)", () => {
    expect(contractDiagnostics(`${generateDeclarations(TOOLS)}\n${SCRIPT_INPUTS_DECLARATION}`).join("\n")).toMatch(/TS2451|TS2300/);
  });

  it("types inputs as the contract says", () => {
    const ok = typeCheckScript(
      parseScript(`const rows = inputs.csv("a.csv"); const n: number = rows.length; return inputs.json("b").anything + n;`, "typescript"),
      generateDeclarations(TOOLS),
    );
    expect(ok).toEqual([]);
    const bad = typeCheckScript(parseScript(`const n: number = inputs.text("a");`, "typescript"), generateDeclarations(TOOLS));
    expect(bad.map((d) => d.message)).toEqual([expect.stringContaining("TS2322")]);
  });

  it("names what is wrong past a long type: the missing property, not a type dump cut short", () => {
    const refund = tool(
      "issueRefund",
      {
        type: "object",
        properties: Object.fromEntries(
          ["invoiceId", "amountMinor", "currency", "reason", "customerReference", "ledgerAccount", "idempotencyKey"].map((name) => [name, { type: "string" }]),
        ),
        required: ["invoiceId", "amountMinor", "reason", "idempotencyKey"],
      },
      null,
    );
    const [missing] = typeCheckScript(
      parseScript(
        `await tools.ledger.issueRefund({ invoiceId: "inv_1", amountMinor: "100", currency: "EUR", reason: "damaged in transit", customerReference: "c-1", ledgerAccount: "4000" });`,
        "typescript",
      ),
      generateDeclarations([refund]),
    );
    expect(missing?.message).toContain("Property 'idempotencyKey' is missing");
    expect(missing!.message.length).toBeLessThanOrEqual(300);
  });

  it("leaves a message that fits whole: an enum's allowed values are what the agent needs", () => {
    const invoices = tool(
      "listInvoices",
      { type: "object", properties: { status: { type: "string", enum: ["draft", "open", "paid", "void", "uncollectible", "partially_refunded"] } } },
      null,
    );
    const [wrong] = typeCheckScript(parseScript(`await tools.ledger.listInvoices({ status: "cancelled" });`, "typescript"), generateDeclarations([invoices]));
    expect(wrong?.message).toContain('"uncollectible" | "partially_refunded"');
    expect(wrong?.message).not.toContain("…");
  });

  it("says when a tool's answer is used without await, as TypeScript does beside the error", () => {
    const invoices = tool("listInvoices", { type: "object", properties: {} }, { type: "object", properties: { invoices: { type: "array" } } });
    const [forgot] = typeCheckScript(
      parseScript(`const res = tools.ledger.listInvoices({});\nreturn res.invoices.length;`, "typescript"),
      generateDeclarations([invoices]),
    );
    expect(forgot?.message).toMatch(/^TS2339: Property 'invoices' does not exist on type 'Promise<.*>'\. Did you forget to use 'await'\?$/);
  });

  it("gives no project advice an agent cannot follow, and says the sandbox has no network", () => {
    const messages = (code: string) => typeCheckScript(parseScript(code, "typescript"), generateDeclarations(TOOLS)).map((d) => d.message);
    expect(messages(`const r = await fetch("https://example.com"); return r.status;`)).toEqual([
      "TS2304: Cannot find name 'fetch'. The sandbox has no network: upstream tools are called as `await tools.<server>.<tool>(args)`.",
    ]);
    for (const message of [...messages(`return Buffer.from("x").length;`), ...messages(`return document.title;`)]) {
      expect(message).toMatch(/^TS\d+: Cannot find name '(Buffer|document)'\.$/);
    }
  });

  it("the sandbox bootstrap implements exactly the declared inputs methods", () => {
    const bootstrap = readFileSync(new URL("../sandbox/child/bootstrap.mjs", import.meta.url), "utf8");
    const body = /function makeInputs[\s\S]*?return freeze\(\{([\s\S]*?)\}\);/.exec(bootstrap)?.[1] ?? "";
    const implemented = [...body.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]);
    expect(implemented.sort()).toEqual([...SCRIPT_INPUT_METHODS].sort());
  });
});

describe("the declarations an agent and the type-checker read", () => {
  it("carry every constraint of the input schema as JSDoc tags, enums as literal types, and `any` for a result without an outputSchema", () => {
    const refund = tool(
      "issueRefund",
      {
        type: "object",
        properties: {
          idempotencyKey: { type: "string", minLength: 8, maxLength: 100 },
          invoiceId: { type: "string", pattern: "^inv_" },
          amountMinor: { type: "integer", minimum: 1, maximum: 100000 },
          currency: { type: "string", enum: ["EUR", "USD"] },
          notifyAt: { type: "string", format: "date-time" },
          lines: { type: "array", maxItems: 5, items: { type: "string" } },
        },
        required: ["idempotencyKey"],
      },
      null,
    );
    const text = generateDeclarations([refund]);
    for (const tag of ["@minLength 8", "@maxLength 100", "@pattern ^inv_", "@minimum 1", "@maximum 100000", "@format date-time", "@maxItems 5"]) {
      expect(text).toContain(tag);
    }
    expect(text).toContain('currency?: "EUR" | "USD";');
    expect(text).toContain("issueRefund(args: {");
    expect(text).toMatch(/\}\): Promise<any>;/);
    // Nothing is known of such a result, so using it is not a type error.
    const script = parseScript('const r = await tools.ledger.issueRefund({ idempotencyKey: "refund-0001" });\nreturn r.refund.id;', "typescript");
    expect(typeCheckScript(script, text)).toEqual([]);
  });

  it("describe a result's fields without the constraints an argument carries", () => {
    const date = { type: "string", description: "ISO date", pattern: "^\\d{4}-\\d{2}-\\d{2}$", minLength: 10 };
    const lookup = tool(
      "lookup",
      { type: "object", properties: { from: date } },
      { type: "object", properties: { issuedAt: date, items: { type: "array", maxItems: 5, items: { type: "object", properties: { on: date } } } } },
    );
    const text = generateDeclarations([lookup]);
    const [args, result] = text.split("}): Promise<");
    expect(args).toContain("/** ISO date @minLength 10 @pattern ^\\d{4}-\\d{2}-\\d{2}$ */\n      from?: string;");
    expect(result).toContain("/** ISO date */\n      issuedAt?: string;");
    expect(result).toContain("/** ISO date */\n        on?: string;");
    expect(result).not.toMatch(/@pattern|@minLength|@maxItems/);
    expect(contractDiagnostics(text)).toEqual([]);
  });

  it("keep an upstream's comment text inside its comment, on one line or many, and drop write hints of a read-only tool", () => {
    const escape = "*/ declare const evil: any; /*";
    const hostile: ToolInfo = {
      ...tool("lookup", { type: "object", properties: { q: { type: "string", description: `short ${escape}` } } }, null),
      description: `one line ${escape}`,
      annotations: { readOnlyHint: true, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    };
    const long: ToolInfo = { ...tool("lookupMore", { type: "object" }, null), description: `${"a long line ".repeat(12)}\n${escape}` };
    const text = generateDeclarations([hostile, long]);
    expect(text).toContain("/** short *\\/ declare const evil: any; /* */");
    expect(text).toContain("@dataClass internal @readOnlyHint true @openWorldHint false */");
    expect(contractDiagnostics(text)).toEqual([]);
    // Had a comment been closed, `evil` would be declared; it is not.
    expect(JSON.stringify(typeCheckScript(parseScript("return evil;", "typescript"), text))).toMatch(/Cannot find name 'evil'/);
  });

  it("follow the tool when it changes: a kept declaration is never one the tool has left", () => {
    const live = tool("lookup", { type: "object", properties: { q: { type: "string" } } }, null);
    expect(generateDeclarations([live])).toContain("q?: string;");
    // Quarantined, relabelled and relisted in place, as the broker and the registry do.
    live.quarantined = true;
    expect(generateDeclarations([live])).toContain("@quarantined");
    live.dataClass = "pii";
    live.annotations = { readOnlyHint: false, destructiveHint: true };
    expect(generateDeclarations([live])).toContain("@dataClass pii @readOnlyHint false @destructiveHint true");
    live.description = "finds a customer";
    expect(generateDeclarations([live])).toContain("finds a customer");
    live.inputSchema = { type: "object", properties: { customerId: { type: "integer" } }, required: ["customerId"] };
    live.outputSchema = { type: "object", properties: { name: { type: "string" } } };
    const relisted = generateDeclarations([live]);
    expect(relisted).toContain("customerId: number;");
    expect(relisted).not.toContain("q?: string;");
    expect(relisted).toContain("Promise<{");
    // A second tool under the same name is declared from its own schemas.
    expect(generateDeclarations([tool("lookup", { type: "object", properties: { other: { type: "boolean" } } }, null)])).toContain("other?: boolean;");
  });
});
