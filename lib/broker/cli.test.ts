/** `airlock exec` and `airlock tools` (lib/cli/exec.ts, lib/cli/tools.ts) end to end, with the real ledger. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { execCommand } from "@/lib/cli/exec";
import { toolsCommand } from "@/lib/cli/tools";
import { REPO_ROOT } from "@/lib/sandbox/runtime";

const dir = mkdtempSync(join(tmpdir(), "airlock-cli-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, "airlock.config.json");
writeFileSync(
  config,
  JSON.stringify({
    servers: {
      ledger: {
        transport: "stdio",
        command: join(REPO_ROOT, "node_modules/.bin/tsx"),
        args: [join(REPO_ROOT, "lib/demo/ledger/server.ts")],
        dataClass: "financial",
      },
    },
    pins: { file: join(dir, "pins.json") },
  }),
);
writeFileSync(
  join(dir, "ok.ts"),
  `const { invoices }: { invoices: { id: string }[] } = await tools.ledger.listInvoices({ status: "void" });\nconsole.log(inputs.text("note"));\nreturn invoices.length;`,
);
writeFileSync(
  join(dir, "refund.js"),
  `return await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 100, reason: "test", idempotencyKey: "key-12345" });`,
);
writeFileSync(join(dir, "note.txt"), "from an input");
writeFileSync(join(dir, "typo.ts"), `const page = await tools.ledger.listInvoices({ limit: "three" });\nreturn page.invoices.length;`);

function capture() {
  const out = { stdout: "", stderr: "" };
  return { out, io: { stdout: (s: string) => void (out.stdout += s), stderr: (s: string) => void (out.stderr += s) } };
}

describe("airlock exec", () => {
  it.each([
    [["--bogus"]],
    [[]],
    [[join(dir, "ok.ts"), "--allow", "ledger.listInvoices", "--allow-all"]],
    [[join(dir, "ok.ts"), "--isolation", "none"]],
    [[join(dir, "ok.ts"), "--input", "novalue"]],
    [[join(dir, "ok.ts"), "--timeout-ms", "-5"]],
    [[join(dir, "notes.txt")]],
  ])("exits 2 with usage for bad arguments %j", async (argv) => {
    const { out, io } = capture();
    expect(await execCommand(argv, io)).toBe(2);
    expect(out.stderr).toContain("Usage: airlock exec");
  });

  it("runs a TypeScript file with inputs and allowed tools, prints the envelope as JSON, exits 0", async () => {
    const { out, io } = capture();
    const code = await execCommand(
      [join(dir, "ok.ts"), "--input", `note=${join(dir, "note.txt")}`, "--allow", "ledger.listInvoices", "--json", "--config", config],
      io,
    );
    expect(out.stderr).toBe("");
    expect(code).toBe(0);
    const env = JSON.parse(out.stdout);
    expect(env).toMatchObject({ status: "succeeded", logs: [{ level: "log", text: "from an input" }], isolation: { level: "strict" } });
    expect(env.result).toBeGreaterThan(0);
  });

  it("type-checks TypeScript against the declarations and prints findings with line and column", async () => {
    const { out, io } = capture();
    expect(await execCommand([join(dir, "typo.ts"), "--allow", "ledger.listInvoices", "--config", config], io)).toBe(1);
    expect(out.stderr).toContain(`${join(dir, "typo.ts")}:1:`);
    expect(out.stderr).toMatch(/error type_error: TS2322: Type 'string' is not assignable to type 'number'/);
    const json = capture();
    await execCommand([join(dir, "typo.ts"), "--allow", "ledger.listInvoices", "--json", "--config", config], json.io);
    expect(JSON.parse(json.out.stdout).findings).toEqual([expect.objectContaining({ code: "type_error", line: 1 })]);
  });

  it("exits 1 when the run fails (a tool outside --allow is CAPABILITY_DENIED)", async () => {
    const { out, io } = capture();
    expect(await execCommand([join(dir, "refund.js"), "--allow", "ledger.listInvoices", "--config", config], io)).toBe(1);
    expect(out.stdout).toContain("status: failed (CAPABILITY_DENIED)");
  });
});

describe("airlock tools", () => {
  it("lists, prints declarations and searches", async () => {
    const list = capture();
    expect(await toolsCommand(["--config", config], list.io)).toBe(0);
    expect(list.out.stdout).toMatch(/ledger\.issueRefund {2}\[destructive, idempotent\] financial/);
    const dts = capture();
    expect(await toolsCommand(["--dts", "--server", "ledger", "--config", config], dts.io)).toBe(0);
    expect(dts.out.stdout).toContain("declare const tools: {");
    const search = capture();
    expect(await toolsCommand(["--search", "refund", "--detail", "name", "--config", config], search.io)).toBe(0);
    expect(JSON.parse(search.out.stdout)).toEqual(expect.arrayContaining([{ server: "ledger", name: "issueRefund" }]));
    const bad = capture();
    expect(await toolsCommand(["--detail", "everything"], bad.io)).toBe(2);
  });
});
