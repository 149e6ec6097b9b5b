import { describe, expect, it } from "vitest";
import { fingerprintScript } from "./script-fingerprint";

const TOOLS = ["ledger.listInvoices"];
const fp = (code: string, tools: readonly string[] = TOOLS, language = "javascript") => fingerprintScript(code, language, tools);

describe("fingerprintScript", () => {
  const base = `const page = await tools.ledger.listInvoices({ status: "open", limit: 500 });
return page.invoices.filter((invoice) => invoice.amountMinor > 1000).length;`;

  it("is the same for other literals, other variable names, comments and layout; the literals are its holes", () => {
    const other = `// overdue ones
const p   = await tools.ledger.listInvoices({ status: "paid", limit: 50 });
return p.invoices.filter((i) => i.amountMinor > 25).length;`;
    expect(fp(other).fingerprint).toBe(fp(base).fingerprint);
    expect(fp(base).holes).toEqual([
      { type: "string", value: "open" },
      { type: "number", value: "500" },
      { type: "number", value: "1000" },
    ]);
    expect(fp(other).holes.map((h) => h.value)).toEqual(["paid", "50", "25"]);
  });

  it("differs when the structure, a property name, a global, the tools or the language differ", () => {
    const variants = [
      base.replace("status:", "state:"), // another argument
      base.replace("amountMinor", "amountMajor"), // another field
      base.replace("> 1000", ">= 1000"), // another operator
      base.replace(".length", ".length + 1"),
      base.replace("tools.ledger", "tools.billing"),
    ];
    for (const code of variants) expect(fp(code).fingerprint, code).not.toBe(fp(base).fingerprint);
    expect(fp(base, ["ledger.listInvoices", "ledger.issueRefund"]).fingerprint).not.toBe(fp(base).fingerprint);
    expect(fp(base, TOOLS, "typescript").fingerprint).not.toBe(fp(base).fingerprint);
  });

  it("keeps keys, element-access names and import specifiers; holes template parts, booleans and bigints", () => {
    const a = fp('import { x } from "lodash";\nconst o = { "a-b": true, n: 10n }; return o["a-b"] ? `id ${o.n} ok` : x;', []);
    expect(a.holes).toEqual([
      { type: "boolean", value: "true" },
      { type: "bigint", value: "10n" },
      { type: "string", value: "id " },
      { type: "string", value: " ok" },
    ]);
    expect(fp('import { x } from "lodash-es";\nconst o = { "a-b": true, n: 10n }; return o["a-b"] ? `id ${o.n} ok` : x;', []).fingerprint).not.toBe(
      a.fingerprint,
    );
    expect(fp('import { x } from "lodash";\nconst o = { "a-c": true, n: 10n }; return o["a-c"] ? `id ${o.n} ok` : x;', []).fingerprint).not.toBe(a.fingerprint);
  });

  it("direct calls of one tool with other arguments share one fingerprint", () => {
    const one = fp('return await tools["ledger"]["listInvoices"]({"limit":3,"status":"open"});');
    const two = fp('return await tools["ledger"]["listInvoices"]({"limit":9,"status":"paid"});');
    expect(two.fingerprint).toBe(one.fingerprint);
    expect(two.holes).toEqual([
      { type: "number", value: "9" },
      { type: "string", value: "paid" },
    ]);
  });

  it("fingerprints code that does not parse, or nests deeper than the parser's stack, without throwing", () => {
    expect(fp("return (((").fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const deep = (n: number) => `return ${"[".repeat(n)}1${"]".repeat(n)};`;
    expect(fp(deep(20_000))).toEqual({ fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/), holes: [] });
    expect(fp(deep(20_000)).fingerprint).not.toBe(fp(deep(20_001)).fingerprint);
  });

  it("stores a literal's U+0000 or lone surrogate as U+FFFD, so the holes can be stored", () => {
    expect(fp('return ["a\\u0000b", "\\ud800"];', []).holes.map((h) => h.value)).toEqual(["a\ufffdb", "\ufffd"]);
  });
});
