/**
 * analyzeScript against a small registry: capability extraction, every finding kind with its
 * position, TypeScript type errors, the effect classification and a fuzz pass that must never
 * make the analyser throw or fail internally.
 */
import { describe, expect, it } from "vitest";
import { analyzeScript, type AnalysisInput } from "@/lib/intake/analyze";
import type { ToolFacts } from "@/lib/contracts/tools";
import type { FindingCode } from "@/lib/errors";

const TOOLS: ToolFacts[] = [
  { server: "ledger", name: "listInvoices", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "financial", quarantined: false },
  { server: "ledger", name: "getCustomer", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "pii", quarantined: false },
  {
    server: "ledger",
    name: "addNote",
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    dataClass: "internal",
    quarantined: false,
  },
  {
    server: "ledger",
    name: "voidInvoice",
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    dataClass: "financial",
    quarantined: false,
  },
  { server: "ledger", name: "archive", annotations: {}, dataClass: "internal", quarantined: false },
  { server: "docs", name: "search", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "public", quarantined: false },
  { server: "web", name: "fetchPage", annotations: { readOnlyHint: true }, dataClass: "public", quarantined: false },
  { server: "ledger", name: "exportAll", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "financial", quarantined: true },
];

const DECLARATIONS = `declare const tools: {
  ledger: {
    listInvoices(args: { customerId?: string; status?: "open" | "paid"; limit?: number }): Promise<{ id: string; customerId: string; amount: number; status: string }[]>;
    getCustomer(args: { id: string }): Promise<{ id: string; name: string; email: string }>;
    addNote(args: { invoiceId: string; text: string }): Promise<{ ok: boolean }>;
    voidInvoice(args: { id: string }): Promise<{ ok: boolean }>;
    archive(args: { before: string }): Promise<{ archived: number }>;
    exportAll(args: {}): Promise<string>;
  };
  docs: { search(args: { query: string }): Promise<{ title: string; url: string }[]> };
  web: { fetchPage(args: { url: string }): Promise<string> };
};`;

function analyze(code: string, overrides: Partial<AnalysisInput> = {}) {
  return analyzeScript({ code, language: "typescript", tools: TOOLS, declarations: DECLARATIONS, allowedPackages: ["lodash", "@std/csv"], ...overrides });
}

const at = (result: ReturnType<typeof analyze>, code: FindingCode) => result.findings.filter((f) => f.code === code).map((f) => [f.line, f.column]);

const codes = (result: ReturnType<typeof analyze>) => result.findings.map((f) => f.code);

describe("capability set", () => {
  it("collects dot, bracket, template-literal and optional-chaining tool access, sorted and unique", () => {
    const result = analyze(
      [
        'const rows = await tools.ledger.listInvoices({ status: "open" });',
        'const c = await tools["ledger"]["getCustomer"]({ id: "c1" });',
        "const hits = await tools[`docs`].search({ query: c.name });",
        "await tools.ledger?.listInvoices?.({ limit: 1 });",
        "return { rows, hits };",
      ].join("\n"),
    );
    expect(result.capabilitySet).toEqual(["docs.search", "ledger.getCustomer", "ledger.listInvoices"]);
    expect(result.findings).toEqual([]);
  });

  it("counts a tool that is referenced without being called", () => {
    const result = analyze("const list = tools.ledger.listInvoices;\nreturn await list({});");
    expect(result.capabilitySet).toEqual(["ledger.listInvoices"]);
    expect(result.findings).toEqual([]);
  });

  it("ignores `tools` in type positions", () => {
    const result = analyze("type L = typeof tools.ledger;\nconst n: number = 1;\nreturn n;");
    expect(result.capabilitySet).toEqual([]);
    expect(result.findings).toEqual([]);
  });
});

describe("findings", () => {
  it.each([
    ["a computed server name", "const s = 'ledger';\nawait tools[s].listInvoices({});", [2, 7]],
    ["a computed tool name", "const t = 'voidInvoice';\nawait tools.ledger[t]({ id: 'x' });", [2, 7]],
    ["an alias of tools", "const t = tools;\nawait t.ledger.voidInvoice({ id: 'x' });", [1, 11]],
    ["an alias of a server", "const l = tools.ledger;\nawait l.voidInvoice({ id: 'x' });", [1, 11]],
    ["destructuring", "const { ledger } = tools;", [1, 20]],
    ["passing tools to a function", "function run(t: unknown) { return t; }\nrun(tools);", [2, 5]],
    ["spreading tools", "const copy = { ...tools };", [1, 19]],
    ["a shorthand property", "const bag = { tools };", [1, 15]],
    ["iterating over tools", "for (const k in tools) console.log(k);", [1, 17]],
    ["declaring its own tools", "const tools = { ledger: {} };", [1, 7]],
    ["assigning a tool", "(tools.ledger as any).voidInvoice = () => 1;", [1, 2]],
    ["reaching tools through globalThis", "await globalThis.tools.ledger.voidInvoice({ id: 'x' });", [1, 7]],
  ])("dynamic_tool_access: %s", (_label, code, position) => {
    expect(at(analyze(code), "dynamic_tool_access")).toContainEqual(position);
  });

  it.each([
    ["eval", "const x = 2;\nreturn eval('x + 1');", [2, 8]],
    ["indirect eval", "return (0, eval)('1');", [1, 12]],
    ["Function", "return Function('return 1')();", [1, 8]],
    ["new Function", "return new Function('a', 'return a')(1);", [1, 12]],
    ["setTimeout with a string", "setTimeout('doIt()', 10);", [1, 1]],
    ["setInterval with a template", "const n = 1;\nsetInterval(`tick(${n})`, 10);", [2, 1]],
    ["import() with a computed specifier", "const m = 'lodash';\nawait import(m);", [2, 7]],
    ["the vm module", 'import vm from "node:vm";\nvm.runInNewContext("1");', [1, 1]],
    ["a data: URL import", 'await import("data:text/javascript,export default 1");', [1, 7]],
    ["the constructor of a constructor", "const f = [].constructor.constructor('return 1');", [1, 11]],
    ["calling a constructor reached by name", "const AsyncFn = (async () => {}).constructor;\nconst g = (async () => {})['constructor']('return 1');", [2, 11]],
    ["WebAssembly", "await WebAssembly.instantiate(new Uint8Array(8));", [1, 7]],
  ])("eval_like: %s", (_label, code, position) => {
    expect(at(analyze(code), "eval_like")).toContainEqual(position);
  });

  it("warns about timers whose callback is not a function literal, and accepts arrows", () => {
    const result = analyze("const cb = () => 1;\nsetTimeout(cb, 5);\nsetTimeout(() => 1, 5);");
    expect(at(result, "indirect_timer_callback")).toEqual([[2, 1]]);
    expect(at(result, "eval_like")).toEqual([]);
  });

  it("warns about reading .constructor without calling it", () => {
    expect(at(analyze("const c = ({}).constructor;"), "constructor_access")).toEqual([[1, 11]]);
  });

  it.each([
    ["globalThis[x]", "const k = 'fetch';\nconst f = globalThis[k];", [2, 11]],
    ["global[x]", "const k = 'x';\nreturn global[k];", [2, 8]],
    ["top-level this[x]", "const k = 'x';\nreturn this[k];", [2, 8]],
    ["an alias of globalThis", "const g = globalThis;", [1, 11]],
    ["a declared globalThis", "const globalThis = { x: 1 };", [1, 7]],
  ])("computed_global: %s", (_label, code, position) => {
    const result = analyze(code, { language: "javascript" });
    expect(at(result, "computed_global")).toContainEqual(position);
  });

  it("does not treat `this` inside a function as the global object", () => {
    const result = analyze("function f(this: any, k: string) { return this[k]; }\nreturn f;");
    expect(codes(result)).not.toContain("computed_global");
  });

  it("records a named read of the global object as info", () => {
    const result = analyze("return globalThis.JSON.stringify({});");
    expect(result.findings).toEqual([{ code: "global_object_access", severity: "info", message: "reads globalThis.JSON", line: 1, column: 8 }]);
  });

  it("flags process and require, directly and through the global object", () => {
    const result = analyze("const env = process.env;\nconst fs = require('fs');\nconst p = globalThis.process;", { language: "javascript" });
    expect(at(result, "process_access")).toEqual([
      [1, 13],
      [3, 11],
    ]);
    expect(at(result, "require_access")).toEqual([[2, 12]]);
  });

  it("refuses imports outside the allowlist, static and dynamic, and accepts allowlisted ones", () => {
    const result = analyze(
      [
        'import _ from "lodash";',
        'import fp from "lodash/fp";',
        'import { parse } from "@std/csv/parse";',
        'import fs from "node:fs";',
        'import local from "./helper.js";',
        'const ax = await import("axios");',
        "return [_, fp, parse, fs, local, ax];",
      ].join("\n"),
    );
    expect(at(result, "disallowed_import")).toEqual([
      [4, 1],
      [5, 1],
      [6, 18],
    ]);
    expect(result.imports).toEqual(["./helper.js", "@std/csv/parse", "axios", "lodash", "lodash/fp", "node:fs"]);
  });

  it("matches builtins with or without node:, and exact builtin subpaths", () => {
    const result = analyze(
      'import fs from "node:fs";\nimport { setTimeout as sleep } from "timers/promises";\nimport util from "node:util/types";\nreturn [fs, sleep, util];',
      { allowedPackages: ["fs", "timers/promises"] },
    );
    expect(at(result, "disallowed_import")).toEqual([[3, 1]]);
  });

  it("refuses code-loading builtins even when allowlisted", () => {
    const result = analyze('import { Worker } from "node:worker_threads";\nreturn Worker;', { allowedPackages: ["worker_threads"] });
    expect(codes(result)).toEqual(["eval_like"]);
  });

  it("flags exports and imports after the first statement", () => {
    const result = analyze('const a = 1;\nimport _ from "lodash";\nexport const b = a;', { language: "javascript" });
    expect(at(result, "module_syntax")).toEqual([
      [2, 1],
      [3, 1],
    ]);
  });

  it("flags unknown and quarantined tools once each, at their first use", () => {
    const result = analyze("await tools.ledger.deleteEverything({});\nawait tools.ledger.deleteEverything({});\nawait tools.ledger.exportAll({});", {
      language: "javascript",
    });
    expect(result.findings).toEqual([
      {
        code: "unknown_tool",
        severity: "critical",
        message: "tools.ledger.deleteEverything is not a tool; search_tools lists the tools that exist",
        line: 1,
        column: 7,
      },
      {
        code: "quarantined_tool",
        severity: "critical",
        message: expect.stringContaining("ledger.exportAll may not be called: its definition changed"),
        line: 3,
        column: 7,
      },
    ]);
  });

  it("warns about unbounded loops around tools that are not read-only, unknown ones included", () => {
    const result = analyze(
      [
        "while (true) {",
        '  const rows = await tools.ledger.listInvoices({ status: "open" });',
        "  if (rows.length === 0) break;",
        "}",
        "for (;;) {",
        '  await tools.ledger.addNote({ invoiceId: "1", text: "x" });',
        "}",
        "do { await tools.other.thing({}); } while (1);",
      ].join("\n"),
      { language: "javascript" },
    );
    expect(result.findings.filter((f) => f.code === "unbounded_loop")).toEqual([
      { code: "unbounded_loop", severity: "warning", message: "loop without an exit condition calls ledger.addNote", line: 5, column: 1 },
      { code: "unbounded_loop", severity: "warning", message: "loop without an exit condition calls other.thing", line: 8, column: 1 },
    ]);
  });

  it("reports syntax errors as critical, with their position", () => {
    const result = analyze("const x = ;\nreturn x;");
    expect(result.findings).toEqual([expect.objectContaining({ code: "syntax_error", severity: "critical", line: 1, column: 11 })]);
  });

  it("treats TypeScript syntax in a JavaScript script as a syntax error", () => {
    const result = analyze("const x: number = 1;\nreturn x;", { language: "javascript" });
    expect(at(result, "syntax_error")).toEqual([[1, 10]]);
  });
});

describe("hidden characters and look-alike identifiers", () => {
  /** The Trojan-source refund: a reviewer reads a one-cent refund, JavaScript runs 2,500.00. */
  const TROJAN = "let amountMinor = 1; // one cent, goodwill\u2028amountMinor = 250000;";

  it("flags U+2028 where it ends the comment, and counts the line after it as line 2 as JavaScript does", () => {
    const result = analyze(TROJAN);
    const hidden = result.findings.filter((f) => f.code === "invisible_character");
    expect(hidden).toEqual([
      { code: "invisible_character", severity: "warning", message: expect.stringContaining("U+2028 LINE SEPARATOR"), line: 1, column: 43 },
    ]);
    expect(hidden[0]!.message).toMatch(/ends the line/);
    // The assignment the comment seems to hide is code on line 2: a finding inside it says so.
    const probe = analyze(`${TROJAN}\u2029const c = ({}).constructor;`);
    expect(at(probe, "constructor_access")).toEqual([[3, 11]]);
    expect(at(probe, "invisible_character")).toEqual([
      [1, 43],
      [2, 22],
    ]);
  });

  it.each([
    ["U+2029", "\u2029", "U+2029 PARAGRAPH SEPARATOR"],
    ["U+00AD", "\u00ad", "U+00AD SOFT HYPHEN"],
    ["U+034F", "\u034f", "U+034F COMBINING GRAPHEME JOINER"],
    ["U+115F", "\u115f", "U+115F HANGUL CHOSEONG FILLER"],
    ["U+3164", "\u3164", "U+3164 HANGUL FILLER"],
    ["U+FFA0", "\uffa0", "U+FFA0 HALFWIDTH HANGUL FILLER"],
    ["U+180E", "\u180e", "U+180E MONGOLIAN VOWEL SEPARATOR"],
    ["U+E0041", "\u{e0041}", "U+E0041 TAG LATIN CAPITAL LETTER A"],
    ["U+202E", "\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"],
    ["U+001B", "\u001b", "U+001B ESCAPE"],
  ])("flags %s in a string on line 2, at its column", (_label, char, described) => {
    const result = analyze(`const a = 1;\nconst s = "x${char}y";\nreturn s;`);
    const hidden = result.findings.filter((f) => f.code === "invisible_character");
    expect(hidden).toEqual([expect.objectContaining({ severity: "warning", line: 2, column: 13, message: expect.stringContaining(described) })]);
  });

  it("reports one finding per astral code point, not per surrogate", () => {
    const result = analyze('const s = "\u{e0041}\u{e0042}";\nreturn s;');
    expect(at(result, "invisible_character")).toEqual([
      [1, 12],
      [1, 14],
    ]);
  });

  it("flags a hidden character used as an identifier, and a lone CR, but not CRLF, LF or tab", () => {
    expect(at(analyze("const \u3164 = 1;\nreturn \u3164;"), "invisible_character")).toEqual([
      [1, 7],
      [2, 8],
    ]);
    expect(at(analyze("const a = 1;\r\n\tconst b = 2;\nreturn a + b;"), "invisible_character")).toEqual([]);
    expect(at(analyze("let x = 1; // note\rx = 2;\nreturn x;"), "invisible_character")).toEqual([[1, 19]]);
  });

  it("caps the list and says how many more there are", () => {
    const result = analyze(`const s = "${"\u200b".repeat(30)}";`);
    const hidden = result.findings.filter((f) => f.code === "invisible_character");
    expect(hidden).toHaveLength(21);
    expect(hidden[20]!.message).toBe("10 more invisible characters not listed");
  });

  it("flags identifiers that mix scripts, naming the look-alike letter, once per name", () => {
    // "amоunt" with U+043E CYRILLIC SMALL LETTER O.
    const result = analyze("const amount = 1;\nconst am\u043eunt = 250000;\nreturn am\u043eunt + amount;");
    const found = result.findings.filter((f) => f.code === "confusable_identifier");
    expect(found).toEqual([
      {
        code: "confusable_identifier",
        severity: "warning",
        message: 'identifier "am\u043eunt" mixes Latin and Cyrillic letters: U+043E CYRILLIC SMALL LETTER O (looks like Latin "o")',
        line: 2,
        column: 7,
      },
    ]);
  });

  it("flags a name written entirely in Cyrillic or Greek look-alikes, and property names too", () => {
    expect(at(analyze("const \u0440\u0430\u0443 = 1;\nreturn \u0440\u0430\u0443;"), "confusable_identifier")).toEqual([[1, 7]]);
    expect(analyze("const x = { \u0391\u0392: 1 };\nreturn x;").findings.find((f) => f.code === "confusable_identifier")?.message).toContain(
      'look like the Latin name "AB"',
    );
    expect(at(analyze("const o = { a: 1 };\nreturn o.\u0430;"), "confusable_identifier")).toEqual([[2, 10]]);
  });

  it("accepts ordinary names: Latin with digits, _ and $, one non-Latin script, and Latin with Japanese", () => {
    const result = analyze(
      [
        "const total_2$ = 1;",
        "const сумма = 2;", // Russian, one script: not every letter is a Latin look-alike
        "const μ = 3;",
        "const 合計データ = 4;",
        "const userの名前 = 5;",
        "return total_2$ + сумма + μ + 合計データ + userの名前;",
      ].join("\n"),
    );
    expect(codes(result)).not.toContain("confusable_identifier");
    expect(codes(result)).not.toContain("invisible_character");
  });
});

describe("type checking", () => {
  it("reports type errors at their line and column in the submitted code", () => {
    const result = analyze(
      [
        'import _ from "lodash";',
        "",
        'const rows = await tools.ledger.listInvoices({ status: "late" });',
        "const total: string = rows.reduce((sum, r) => sum + r.amount, 0);",
        "await tools.docs.search({ q: 'x' });",
        "return total;",
      ].join("\n"),
    );
    const errors = result.findings.filter((f) => f.code === "type_error" || f.code === "argument_type_error");
    expect(errors.map((f) => [f.line, f.column, f.code, f.severity])).toEqual([
      [3, 48, "argument_type_error", "error"],
      [4, 7, "type_error", "error"],
      [5, 27, "argument_type_error", "error"],
    ]);
    expect(errors[0]!.message).toMatch(/^TS2322: Type '"late"' is not assignable/);
  });

  it("knows the runtime contract: inputs, console, await and return at top level", () => {
    const result = analyze(
      [
        "const names: string[] = inputs.list().map((input) => input.name);",
        'const rows = inputs.csv("customers.csv");',
        'const cfg = inputs.json("config.json");',
        "console.table(rows);",
        "console.log(names.length, rows[0]?.email, cfg.threshold);",
        'const hits = await tools.docs.search({ query: inputs.text("q.txt") });',
        "return { count: rows.length, hits };",
      ].join("\n"),
    );
    expect(result.findings).toEqual([]);
  });

  it("lets an empty array grow with what is pushed, and takes untyped helpers as they are", () => {
    const result = analyze(
      [
        "const rows = [];",
        'for (const inv of await tools.ledger.listInvoices({ status: "open" })) rows.push(inv.id);',
        "function total(items) { return items.length; }",
        "return total(rows) + rows.length;",
      ].join("\n"),
    );
    expect(result.findings).toEqual([]);
  });

  it("does not report unresolvable imports as type errors (disallowed_import covers them)", () => {
    const result = analyze('import x from "left-pad";\nreturn x;');
    expect(codes(result)).toEqual(["disallowed_import"]);
  });
});

describe("output and facts", () => {
  it("strips types from TypeScript and keeps imports and the body contract", () => {
    const result = analyze('import _ from "lodash";\ninterface Row { id: string }\nconst rows: Row[] = [];\nreturn _.size(rows as Row[]);');
    expect(result.javascript).toBe('import _ from "lodash";\nconst rows = [];\nreturn _.size(rows);\n');
  });

  it("keeps a script without imports a plain function body", () => {
    const result = analyze("const n: number = await (tools as any).ledger.listInvoices({});\nreturn n;");
    expect(result.javascript).toBe("const n = await tools.ledger.listInvoices({});\nreturn n;\n");
    expect(result.capabilitySet).toEqual(["ledger.listInvoices"]);
  });

  it.each([
    ["a line comment", "const n: number = 1;\nreturn n;\n// repetition 3", "const n = 1;\nreturn n;\n// repetition 3\n"],
    ["a block comment and blank lines", "return 1;\n/* done */\n\n", "return 1;\n/* done */\n"],
    ["a string holding the appended export", "const s = `\nexport {};\n`;\nreturn s;", "const s = `\nexport {};\n`;\nreturn s;\n"],
    [
      "a string of comment-like text after an export line (no exponential backtracking)",
      "const s = `\nexport {};\n" + "// ".repeat(40) + "\nx`;\nreturn s;",
      "const s = `\nexport {};\n" + "// ".repeat(40) + "\nx`;\nreturn s;\n",
    ],
  ])("keeps a script that ends in %s a plain function body (the transpiler's export goes)", (_, code, javascript) => {
    expect(analyze(code).javascript).toBe(javascript);
  });

  it("passes JavaScript through unchanged", () => {
    const code = "const rows = await tools.ledger.listInvoices({});\nreturn rows.length;";
    const result = analyze(code, { language: "javascript" });
    expect(result.javascript).toBe(code);
    expect(result.capabilitySet).toEqual(["ledger.listInvoices"]);
  });

  it.each([
    ["no tools at all", "return 1;", { effect: "read_only", openWorld: false, dataClasses: [], toolCount: 0, readOnlyDataClasses: [], checks: [] }],
    [
      "only read-only tools",
      "await tools.ledger.listInvoices({});\nawait tools.docs.search({ query: 'a' });",
      { effect: "read_only", openWorld: false, dataClasses: ["financial", "public"], toolCount: 2, readOnlyDataClasses: ["financial", "public"], checks: [] },
    ],
    [
      "a write with destructiveHint false",
      "await tools.ledger.addNote({ invoiceId: '1', text: 'x' });",
      { effect: "write", openWorld: false, dataClasses: ["internal"], toolCount: 1, readOnlyDataClasses: [], checks: [] },
    ],
    [
      "a destructive tool",
      "await tools.ledger.addNote({ invoiceId: '1', text: 'x' });\nawait tools.ledger.voidInvoice({ id: '1' });",
      { effect: "destructive", openWorld: false, dataClasses: ["financial", "internal"], toolCount: 2, readOnlyDataClasses: [], checks: [] },
    ],
    [
      "a write tool without destructiveHint (MCP default: destructive)",
      "await tools.ledger.archive({ before: '2020' });",
      { effect: "destructive", openWorld: true, dataClasses: ["internal"], toolCount: 1, readOnlyDataClasses: [], checks: [] },
    ],
    [
      "an unknown tool",
      "await tools.ledger.listInvoices({});\nawait (tools as any).ledger.shred({});",
      { effect: "destructive", openWorld: true, dataClasses: ["financial"], toolCount: 2, readOnlyDataClasses: ["financial"], checks: [] },
    ],
    [
      "a read-only tool without openWorldHint (MCP default: open world)",
      "await tools.web.fetchPage({ url: 'https://example.com' });",
      { effect: "read_only", openWorld: true, dataClasses: ["public"], toolCount: 1, readOnlyDataClasses: ["public"], checks: [] },
    ],
  ])("facts for %s", (_label, code, facts) => {
    expect(analyze(code).facts).toEqual(facts);
  });

  it.each([
    [
      "checks called in place",
      'const r = await tools.ledger.listInvoices({});\nawait checks.sum("net", r.rows, "a", 1);\nchecks.rowCount("n", r.rows, { min: 1 });',
      ["rowCount", "sum"],
    ],
    ["a check inside a callback still counts", "[1].forEach(() => checks.equal('x', 1, 1));", ["equal"]],
    ["assumptions are not checks", "checks.assume('refunds are separate rows'); checks.allowPartial('x');", []],
    ["the script's own checks shadow the runtime's", "const checks = { sum() {} };\nchecks.sum('x', [], 'a', 1);", []],
    ["an alias is not followed", "const c = checks;\nc.sum('x', [], 'a', 1);", []],
    ["a check taken as a value is not called in place", "const f = checks.sum;\nawait f('x', [], 'a', 1);", []],
  ])("check kinds: %s", (_label, code, kinds) => {
    expect(analyze(code).facts.checks).toEqual(kinds);
  });
});

describe("robustness", () => {
  // A tiny deterministic PRNG so a failure can be reproduced from its seed.
  function random(seed: number) {
    let state = seed >>> 0;
    return () => {
      state = (state * 1664525 + 1013904223) >>> 0;
      return state / 2 ** 32;
    };
  }

  const FRAGMENTS = [
    "tools",
    ".",
    "ledger",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    "await",
    "return",
    "const",
    "x",
    "=",
    ";",
    "\n",
    "'",
    '"',
    "`",
    "${",
    "eval",
    "import",
    "from",
    "export",
    "globalThis",
    "this",
    "while",
    "for",
    "true",
    "=>",
    "async",
    "function",
    "class",
    "new",
    "Function",
    "...",
    "?.",
    "as",
    "any",
    "<",
    ">",
    ":",
    ",",
    "/*",
    "*/",
    "//",
    "\\",
    "0",
    "1e309",
    "listInvoices",
    "voidInvoice",
    "type",
    "interface",
    "enum",
    "constructor",
    "setTimeout",
    "process",
    "require",
    "@",
    "#",
    "\u0000",
    "\u202e",
    "𝒳",
  ];
  const VALID = [
    'import _ from "lodash";',
    "const rows = await tools.ledger.listInvoices({ limit: 10 });",
    "for (const r of rows) {",
    "  if (r.amount > 100) await tools.ledger.addNote({ invoiceId: r.id, text: `big ${r.amount}` });",
    "}",
    "return rows.map((r) => r.id);",
  ].join("\n");

  it("never throws and never fails internally on random or mangled scripts", () => {
    const next = random(20261130);
    for (let i = 0; i < 150; i++) {
      let code: string;
      if (i % 2 === 0) {
        const length = Math.floor(next() * 60);
        code = Array.from({ length }, () => FRAGMENTS[Math.floor(next() * FRAGMENTS.length)]).join(next() < 0.5 ? " " : "");
      } else {
        const cut = Math.floor(next() * VALID.length);
        const insert = FRAGMENTS[Math.floor(next() * FRAGMENTS.length)]!;
        code = VALID.slice(0, cut) + insert + VALID.slice(cut + Math.floor(next() * 5));
      }
      const language = next() < 0.7 ? "typescript" : "javascript";
      const result = analyze(code, { language });
      expect(codes(result), `seed case ${i}: ${JSON.stringify(code)}`).not.toContain("analysis_error");
      for (const f of result.findings) {
        expect(f.line).toBeGreaterThanOrEqual(1);
        expect(f.column).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it("fails closed when the analyser itself breaks", () => {
    const result = analyzeScript({ code: "return 1;", language: "typescript", tools: null as never, declarations: "", allowedPackages: [] });
    expect(result.findings).toEqual([expect.objectContaining({ code: "analysis_error", severity: "critical" })]);
    expect(result.facts.effect).toBe("destructive");
  });
});

describe("reaching the runtime's parameters and shared objects", () => {
  it("`arguments` outside a function is the wrapper's parameters: a critical dynamic_tool_access", () => {
    const aliased = analyze('const t = arguments[0];\nreturn await t.ledger.voidInvoice({ id: "inv_1" });', { language: "javascript" });
    expect(at(aliased, "dynamic_tool_access")).toEqual([[1, 11]]);
    expect(aliased.findings.find((f) => f.code === "dynamic_tool_access")?.severity).toBe("critical");
    expect(codes(analyze("const f = () => arguments.length;\nreturn f();", { language: "javascript" }))).toContain("dynamic_tool_access");
    // A function's own `arguments` is its own business.
    expect(
      analyze("function sum() { let s = 0; for (const n of arguments) s += n; return s; }\nreturn sum(1, 2);", { language: "javascript" }).findings,
    ).toEqual([]);
  });

  it("an overridden EventEmitter.prototype.emit, which Node calls with process as this, is critical builtin_tampering", () => {
    const script = [
      'import { EventEmitter } from "events";',
      "let leaked;",
      "const emit = EventEmitter.prototype.emit;",
      "EventEmitter.prototype.emit = function (...args) { leaked ??= this; return emit.apply(this, args); };",
      "Buffer(1);",
      "return typeof leaked?.pid;",
    ].join("\n");
    const result = analyze(script, { language: "javascript", allowedPackages: ["events"] });
    expect(at(result, "builtin_tampering")).toEqual([[4, 1]]);
    expect(result.findings.find((f) => f.code === "builtin_tampering")?.severity).toBe("critical");
  });

  it.each([
    ["a prototype through its constructor's name", 'import events from "events";\nevents.EventEmitter.prototype.emit = () => true;'],
    ["a prototype taken as a value", 'import { EventEmitter } from "events";\nconst p = EventEmitter.prototype;\np.emit = () => true;'],
    ["getPrototypeOf", 'import { EventEmitter } from "events";\nObject.getPrototypeOf(new EventEmitter()).emit = () => true;'],
    ["__proto__", 'import { EventEmitter } from "events";\nnew EventEmitter().__proto__.emit = () => true;'],
    ["defineProperty on a prototype", 'Object.defineProperty(Array.prototype, "map", { value: () => [] });'],
    ["a destructuring assignment", "[Promise.prototype.then] = [() => 1];"],
    ["a builtin's static member", "Error.prepareStackTrace = (e, frames) => frames;"],
    ["a deleted member of a builtin", "delete JSON.parse;"],
    ["an imported module's member", 'import * as util from "util";\nutil.inspect.defaultOptions.depth = 0;'],
    ["setPrototypeOf", "Object.setPrototypeOf({}, null);"],
    ["Object.assign onto a builtin", "Object.assign(Math, { random: () => 4 });"],
  ])("%s is critical builtin_tampering", (_, code) => {
    expect(codes(analyze(code, { language: "javascript", allowedPackages: ["events", "util"] }))).toContain("builtin_tampering");
  });

  it.each([
    ["calling a prototype method in place", "return Array.prototype.slice.call([1, 2, 3], 1);"],
    ["writing the script's own objects", "const totals = {};\ntotals.eur = 1;\nconst rows = [{ n: 1 }];\nrows[0].n += 1;\nreturn { totals, rows };"],
    ["copying into a fresh object", "return Object.assign({}, { a: 1 });"],
    ["a null-prototype literal", "return { __proto__: null, a: 1 };"],
  ])("%s is not tampering", (_, code) => {
    expect(codes(analyze(code, { language: "javascript" }))).not.toContain("builtin_tampering");
  });
});

describe("tool-call arguments known before the run", () => {
  const REFUND_SCHEMA = {
    type: "object",
    properties: {
      invoiceId: { type: "string", pattern: "^inv_" },
      amountMinor: { type: "integer", exclusiveMinimum: 0 },
      currency: { type: "string", enum: ["EUR", "USD"] },
      reason: { type: "string", minLength: 3, maxLength: 200 },
      idempotencyKey: { type: "string", minLength: 8, maxLength: 100 },
      notifyAt: { type: "string", format: "date-time" },
      lines: { type: "array", maxItems: 2, items: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] } },
    },
    required: ["invoiceId", "amountMinor", "reason", "idempotencyKey"],
    additionalProperties: false,
  };
  const REFUND: ToolFacts = {
    server: "ledger",
    name: "issueRefund",
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    dataClass: "financial",
    quarantined: false,
    inputSchema: REFUND_SCHEMA,
  };
  const check = (code: string) =>
    analyze(code, {
      language: "javascript",
      tools: [...TOOLS, REFUND],
      declarations: "declare const tools: any;",
    }).findings.filter((f) => f.code === "argument_invalid");

  it("the refund with a 7-character idempotency key is found at the key, naming the argument and the rule", () => {
    const findings = check(
      'const r = await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 1, reason: "duplicate", idempotencyKey: "cs-1042" });',
    );
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ severity: "error", line: 1, column: 104 });
    expect(findings[0]!.message).toBe("tools.ledger.issueRefund: idempotencyKey must NOT have fewer than 8 characters (minLength)");
  });

  it.each([
    ["a pattern", '{ invoiceId: "x_1", amountMinor: 1, reason: "abc", idempotencyKey: "12345678" }', "invoiceId must match pattern"],
    [
      "a minimum through unary minus",
      '{ invoiceId: "inv_1", amountMinor: -5, reason: "abc", idempotencyKey: "12345678" }',
      "amountMinor must be > 0 (exclusiveMinimum)",
    ],
    [
      "an enum",
      '{ invoiceId: "inv_1", amountMinor: 1, currency: "GBP", reason: "abc", idempotencyKey: "12345678" }',
      'currency must be one of "EUR", "USD" (enum)',
    ],
    [
      "a format",
      '{ invoiceId: "inv_1", amountMinor: 1, notifyAt: "tomorrow", reason: "abc", idempotencyKey: "12345678" }',
      'notifyAt must match format "date-time"',
    ],
    [
      "maxItems",
      '{ invoiceId: "inv_1", amountMinor: 1, lines: [{ sku: "a" }, { sku: "b" }, { sku: "c" }], reason: "abc", idempotencyKey: "12345678" }',
      "lines must NOT have more than 2 items (maxItems)",
    ],
    ["a missing required property", '{ invoiceId: "inv_1", amountMinor: 1, reason: "abc" }', "idempotencyKey is required (required)"],
    [
      "an unknown property",
      '{ invoiceId: "inv_1", amountMinor: 1, reason: "abc", idempotencyKey: "12345678", force: true }',
      "force is not an argument of this tool",
    ],
    [
      "a template string and a same-scope const",
      'const key = `short`;\nawait tools.ledger.issueRefund({ invoiceId: `inv_1`, amountMinor: 1, reason: "abc", idempotencyKey: key });',
      "idempotencyKey must NOT have fewer than 8",
    ],
  ])("%s", (_, args, message) => {
    const code = args.includes("tools.") ? args : `await tools.ledger.issueRefund(${args});`;
    expect(
      check(code)
        .map((f) => f.message)
        .join("\n"),
    ).toContain(message);
  });

  it.each([
    ["a valid call", 'await tools.ledger.issueRefund({ invoiceId: "inv_1", amountMinor: 100, reason: "duplicate", idempotencyKey: "refund-0001" });'],
    [
      "values known only at run time",
      'const inv = await tools.ledger.listInvoices({});\nawait tools.ledger.issueRefund({ invoiceId: inv[0].id, amountMinor: inv[0].amount, reason: "dup", idempotencyKey: `k-${inv[0].id}` });',
    ],
    [
      "a spread may supply the required properties",
      'const base = { invoiceId: "inv_1", amountMinor: 1, reason: "abc", idempotencyKey: "12345678" };\nawait tools.ledger.issueRefund({ ...base });',
    ],
    ["a type assertion", "await tools.ledger.issueRefund({} as any);"],
    [
      "a const shadowed by a loop variable",
      'const key = "short";\nfor (const key of ["long-enough-1"]) await tools.ledger.issueRefund({ invoiceId: "inv_1", amountMinor: 1, reason: "abc", idempotencyKey: key });',
    ],
    [
      "a parameter of the same name",
      'const key = "short";\nconst refund = async (key) => tools.ledger.issueRefund({ invoiceId: "inv_1", amountMinor: 1, reason: "abc", idempotencyKey: key });\nawait refund("long-enough-1");',
    ],
    [
      "a let, which may change",
      'let key = "short";\nkey += "-and-more";\nawait tools.ledger.issueRefund({ invoiceId: "inv_1", amountMinor: 1, reason: "abc", idempotencyKey: key });',
    ],
  ])("%s is not reported", (_, code) => {
    expect(check(code)).toEqual([]);
  });

  it("a type error inside a tool call's arguments is argument_type_error; elsewhere it stays type_error", () => {
    const result = analyze('await tools.ledger.getCustomer({ id: 42 });\nconst n: number = "x";\nreturn n;');
    expect(at(result, "argument_type_error")).toEqual([[1, 34]]);
    expect(at(result, "type_error")).toEqual([[2, 7]]);
  });
});

describe("findings an agent can act on", () => {
  it("an unknown tool is one finding with the nearest registered name, and no type dump", () => {
    const result = analyze('const r = await tools.ledger.voidInvoce({ id: "inv_1" });\nreturn r;');
    expect(result.findings.map((f) => [f.code, f.message])).toEqual([
      ["unknown_tool", "tools.ledger.voidInvoce is not a tool; did you mean tools.ledger.voidInvoice?"],
    ]);
    const far = analyze("return await tools.ledger.dropDatabase({});", { language: "javascript" });
    expect(far.findings[0]!.message).toBe("tools.ledger.dropDatabase is not a tool; search_tools lists the tools that exist");
  });

  it("a name defined nowhere the sandbox reaches is a critical finding (the run would fail there), not a type error for a reviewer", () => {
    const misspelt = analyze("const invoices = await tools.ledger.listInvoices({});\nreturn invoicez.length;");
    expect(misspelt.findings.map((f) => [f.code, f.severity, f.message])).toEqual([
      ["undefined_name", "critical", "TS2552: Cannot find name 'invoicez'. Did you mean 'invoices'?"],
    ]);
    expect(analyze('const r = await fetch("https://example.com");\nreturn r.status;').findings.map((f) => f.code)).toEqual(["undefined_name"]);
    // Names this Node defines, which the declarations lack, run: a reviewer judges them as before.
    expect(analyze("return new AbortController().signal.aborted;").findings.map((f) => f.code)).toEqual(["type_error"]);
    // Those scripts commonly use are declared: no finding at all.
    expect(analyze("return [performance.now(), crypto.randomUUID(), atob(btoa('x'))];").findings).toEqual([]);
    // A missing name in a type is stripped before the script runs.
    const typeOnly = analyze("const n: Invoicez | number = 1;\nreturn n;");
    expect(typeOnly.findings.map((f) => f.code)).toEqual(["type_error"]);
  });

  it("a script that writes and reads the clock or randomness is warned about, where it first does; one that only reads is not", () => {
    const keyed = analyze('const key = "note-" + Date.now();\nawait tools.ledger.addNote({ invoiceId: "inv_1", text: key });\nreturn 1;');
    expect(keyed.findings.map((f) => [f.code, f.severity, f.line, f.column])).toEqual([["clock_or_random", "warning", 1, 23]]);
    expect(keyed.findings[0]!.message).toMatch(/^the script reads Date\.now and calls tools that write/);
    const stamped = analyze('await tools.ledger.addNote({ invoiceId: "inv_1", text: `at ${new Date().toISOString()}` });\nreturn 1;');
    expect(stamped.findings.map((f) => [f.code, f.message.slice(0, 33)])).toEqual([["clock_or_random", "the script reads new Date() and c"]]);
    const random = analyze('await tools.ledger.voidInvoice({ id: "inv_" + Math.floor(Math.random() * 9) });\nreturn 1;');
    expect(random.findings.map((f) => f.code)).toEqual(["clock_or_random"]);
    // A read, or a date built from a value, is not.
    expect(analyze("const since = Date.now() - 86_400_000;\nreturn (await tools.ledger.listInvoices({})).length + since;").findings).toEqual([]);
    expect(analyze('await tools.ledger.addNote({ invoiceId: "inv_1", text: new Date("2026-01-01").toISOString() });\nreturn 1;').findings).toEqual([]);
  });

  it("keeps a type error's message short, whatever the types involved", () => {
    const result = analyze('const c = await tools.ledger.getCustomer({ id: "c1" });\nconst n: number = c;\nreturn n;');
    const error = result.findings.find((f) => f.code === "type_error")!;
    expect(error.message.length).toBeLessThanOrEqual(300);
    expect(error.message).toMatch(/^TS2322: /);
  });
});

describe("the analysis cache", () => {
  const code = "const invoices = await tools.ledger.listInvoices({});\nreturn invoices.length;";

  it("answers the same input with the same analysis, each caller with its own copy", () => {
    const first = analyze(code);
    first.capabilitySet.push("ledger.archive");
    first.facts.effect = "destructive";
    const second = analyze(code);
    expect(second.capabilitySet).toEqual(["ledger.listInvoices"]);
    expect(second.facts.effect).toBe("read_only");
    expect(second.findings).toEqual([]);
  });

  it("never answers from before a tool changed: quarantined, reclassified, re-annotated, or another allowlist", () => {
    expect(analyze(code).findings).toEqual([]);
    const changed = (patch: Partial<ToolFacts>) => TOOLS.map((tool) => (tool.name === "listInvoices" ? { ...tool, ...patch } : tool));
    expect(codes(analyze(code, { tools: changed({ quarantined: true }) }))).toEqual(["quarantined_tool"]);
    expect(analyze(code, { tools: changed({ dataClass: "pii" }) }).facts.dataClasses).toEqual(["pii"]);
    expect(analyze(code, { tools: changed({ annotations: { readOnlyHint: false } }) }).facts.effect).toBe("destructive");
    const importing = 'import _ from "lodash";\nreturn _.size([]);';
    expect(analyze(importing).findings).toEqual([]);
    expect(codes(analyze(importing, { allowedPackages: [] }))).toEqual(["disallowed_import"]);
    // And back: the original input still gets its own analysis.
    expect(analyze(code).findings).toEqual([]);
  });
});
