/**
 * Result checks in a real sandbox (strict): the script declares them, the host decides them.
 * A failing sum ends the run check_failed (CHECK_FAILED naming it) with the result kept in the
 * envelope; a swallowed failure is SWALLOWED_FAILURE unless declared partial; assumptions and
 * lineage reach the gate report; and a script cannot make a failed check pass — not by replacing
 * `checks`, not by writing a verdict frame of its own.
 */
import { describe, expect, it } from "vitest";
import { runInSandbox, type CallTool } from "./index";

const invoices = Array.from({ length: 5 }, (_, i) => ({ id: `inv_${i}`, amountMinor: 100 * (i + 1), currency: i === 4 ? "USD" : "EUR" }));
const ledger: CallTool = async (_server, tool) => {
  if (tool === "listInvoices") return { invoices, nextCursor: null };
  if (tool === "listRefunds") return { refunds: [{ id: "re_1", amountMinor: 50 }] };
  throw new Error("upstream is down");
};
const run = (code: string) =>
  runInSandbox({ code, allowedTools: ["ledger.listInvoices", "ledger.listRefunds", "ledger.broken"], callTool: ledger, isolation: "strict" });

describe("checks, decided by the host", () => {
  it("a passing script: verdicts come back to the script, and lineage counts the rows each tool returned", async () => {
    const env = await run(`
const { invoices } = await tools.ledger.listInvoices({});
const refunds = (await tools.ledger.listRefunds({})).refunds;
const verdict = await checks.sum("gross", invoices, "amountMinor", 1500);
checks.rowCount("all invoices", invoices, { min: 1 });
checks.sum("refunds", refunds, "amountMinor", 50);
checks.assume("refunds are separate rows, not negative invoices");
return { net: 1500 - 50, verdict };`);
    expect(env.status).toBe("succeeded");
    expect(env.error).toBeNull();
    expect(env.result).toEqual({ net: 1450, verdict: { ok: true, message: "the sum of amountMinor over 5 rows is 1500, expected 1500" } });
    expect(env.gate.checks.map((c) => [c.kind, c.label, c.ok])).toEqual([
      ["sum", "gross", true],
      ["rowCount", "all invoices", true],
      ["sum", "refunds", true],
    ]);
    expect(env.gate.assumptions).toEqual(["refunds are separate rows, not negative invoices"]);
    // The invoices were checked twice (one set of rows), the refunds once: 6 of the 6 rows read.
    expect(env.gate.rows).toEqual({ read: { "ledger.listInvoices": 5, "ledger.listRefunds": 1 }, returned: 0, covered: 6 });
    expect(env.flags).not.toContain("rows_unaccounted");
  });

  it("a failing sum ends the run check_failed, naming the check, with the numbers; the result is kept for the audit log", async () => {
    const env = await run(`
const { invoices } = await tools.ledger.listInvoices({});
const net = invoices.reduce((s, i) => s + i.amountMinor, 0) * 1.07;
await checks.sum("net revenue", invoices, "amountMinor", net);
return { net };`);
    expect(env.status).toBe("check_failed");
    expect(env.error).toMatchObject({
      code: "CHECK_FAILED",
      message: 'check "net revenue" (sum) failed: the sum of amountMinor over 5 rows is 1500, expected 1605 (off by 105)',
      untrusted: true,
    });
    expect(env.result).toEqual({ net: 1605 });
  });

  it("sameUnit catches the mixed currency a plain sum hides; rows dropped without an assumption are flagged", async () => {
    const env = await run(`
const { invoices } = await tools.ledger.listInvoices({});
const eur = invoices.filter((i) => i.currency === "EUR");
await checks.sum("EUR total", eur, "amountMinor", 1000);
await checks.sameUnit("one currency", invoices, "currency");
return 1000;`);
    expect(env.status).toBe("check_failed");
    expect(env.error?.message).toContain('check "one currency" (sameUnit) failed: 2 different values of currency: "EUR" (4), "USD" (1)');
    expect(env.gate.rows).toMatchObject({ read: { "ledger.listInvoices": 5 }, covered: 4 });
    expect(env.flags).toContain("rows_unaccounted");
  });

  it("a swallowed tool failure is SWALLOWED_FAILURE with its result; declared partial, it is not", async () => {
    const swallowed = await run(`
let extra = null;
try { extra = await tools.ledger.broken({}); } catch { /* ignored */ }
return { total: 1500, extra };`);
    expect(swallowed).toMatchObject({ status: "succeeded", result: { total: 1500, extra: null }, error: { code: "SWALLOWED_FAILURE", untrusted: false } });
    expect(swallowed.flags).toEqual(expect.arrayContaining(["swallowed_errors", "tool_errors"]));
    const partial = await run(`
checks.allowPartial("the broken upstream only adds notes");
try { await tools.ledger.broken({}); } catch { /* declared above */ }
return { total: 1500 };`);
    expect(partial).toMatchObject({ status: "succeeded", error: null, gate: { partial: "the broken upstream only adds notes" } });
    const logged = await run(`console.error("could not load refunds"); return 1;`);
    expect(logged.error?.code).toBe("SWALLOWED_FAILURE");
  });

  it("a script that returns without waiting for its tool calls is SWALLOWED_FAILURE too", async () => {
    const slow: CallTool = async () => new Promise((resolve) => setTimeout(() => resolve({ refunds: [] }), 2_000));
    const env = await runInSandbox({
      code: `tools.ledger.listRefunds({}); const raced = await Promise.race([tools.ledger.listRefunds({}), new Promise((r) => setTimeout(() => r("timer"), 50))]); return raced;`,
      allowedTools: ["ledger.listRefunds"],
      callTool: slow,
      isolation: "strict",
    });
    expect(env).toMatchObject({
      status: "succeeded",
      result: "timer",
      error: { code: "SWALLOWED_FAILURE", message: expect.stringContaining("2 tool call(s) it did not wait for") },
    });
    expect(env.flags).toContain("abandoned_calls");
  });

  it("a thrown error carries the frames of its stack, pointing at the script's line", async () => {
    const env = await run(`const a = 1;\nnull.boom;\nreturn a;`);
    expect(env.error).toMatchObject({ code: "SCRIPT_ERROR", message: expect.stringContaining("TypeError") });
    expect(env.error?.detail).toMatch(/^\s+at .*script\.mjs:2:\d+/);
  });

  it.each([
    ["javascript", `throw new Error("boom");`, 1, 7],
    ["javascript", `import { parse } from "csv-parse/sync"; throw new Error(String(typeof parse));`, 1, 47],
    ["typescript", `const n: number = 1; throw new Error(String(n));`, 1, 28],
    ["javascript", `const a = 1;\n\n  throw new Error("boom");`, 3, 9],
  ] as const)("a %s error's position is the script's own, on its first line too (%#)", async (language, code, line, column) => {
    const env = await runInSandbox({ code, language, allowedTools: [], callTool: async () => null, isolation: "strict" });
    expect(env.error?.detail).toMatch(new RegExp(`^\\s+at .*script\\.mjs:${line}:${column}\\)?$`, "m"));
  });

  it("a stack cut to its last 4 KiB keeps whole frame lines only: no fragment of the message's values", async () => {
    // The child keeps the stack's last 4 KiB, which starts inside this message: "…ice Smith, Alice Smith".
    const env = await run(`throw new Error("Alice Smith, ".repeat(600));`);
    expect(env.error?.message).toContain("Alice Smith, Alice Smith");
    expect(env.error?.detail).toMatch(/^\s+at .*script\.mjs:1:\d+/);
    expect(env.error?.detail).not.toMatch(/Alice|Smith/);
    expect(env.error!.detail!.split("\n").every((line) => /^\s+at /.test(line))).toBe(true);
  });

  it("attack: a script cannot make a failed check pass — replacing checks, or writing its own verdict frame, changes nothing", async () => {
    const replaced = await run(`
try { checks.sum = async () => ({ ok: true, message: "fine" }); } catch {}
try { Object.defineProperty(checks, "sum", { value: async () => ({ ok: true }) }); } catch {}
await checks.sum("net", [{ a: 1 }], "a", 2);
return "done";`);
    expect(replaced).toMatchObject({ status: "check_failed", error: { code: "CHECK_FAILED" } });
    const forged = await run(`
const fs = await import("node:fs");
fs.writeSync(1, JSON.stringify({ t: "checked", id: 1, ok: true, message: "forged" }) + "\\n");
await checks.sum("net", [{ a: 1 }], "a", 2);
return "done";`);
    // A verdict frame is the host's to send: from the child it is a protocol violation.
    expect(forged.status).toBe("failed");
    expect(forged.error?.code).toBe("RPC_VIOLATION");
  });

  it("arguments that are not JSON fail the check instead of passing it", async () => {
    const env = await run(`const rows = [1n]; await checks.rowCount("bigint rows", rows, { min: 1 }); return 1;`);
    expect(env).toMatchObject({ status: "check_failed", error: { message: expect.stringContaining("not JSON-serializable") } });
  });
});
