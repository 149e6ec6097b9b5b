/**
 * `airlock exec` and `airlock tools` (lib/cli/exec.ts, lib/cli/tools.ts) end to end, with the real
 * ledger and the tool pins in PostgreSQL (the database the CLI commands use, via DATABASE_URL).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execCommand } from "@/lib/cli/exec";
import type { CliIo } from "@/lib/cli/io";
import { runCli } from "@/lib/cli/main";
import { toolsCommand } from "@/lib/cli/tools";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { REPO_ROOT } from "@/lib/sandbox/host";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { createUser } from "@/lib/auth/users";

const dir = mkdtempSync(join(tmpdir(), "airlock-cli-test-"));
const ledger = {
  transport: "stdio",
  command: join(REPO_ROOT, "node_modules/.bin/tsx"),
  args: [join(REPO_ROOT, "lib/demo/ledger/server.ts")],
  dataClass: "financial",
};
const config = join(dir, "airlock.config.json");
writeFileSync(config, JSON.stringify({ servers: { ledger } }));
/** A config file from before pins moved to the database. */
const legacyConfig = join(dir, "legacy.config.json");
const pinFile = join(dir, "pins.json");
writeFileSync(legacyConfig, JSON.stringify({ servers: { ledger }, pins: { file: pinFile } }));

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
});
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});
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
  const io: CliIo = { stdout: (s) => void (out.stdout += s), stderr: (s) => void (out.stderr += s), readStdin: async () => "" };
  return { out, io };
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

  it("names itself and sets the usage off by a blank line", async () => {
    const { out, io } = capture();
    expect(await execCommand(["--dev"], io)).toBe(2);
    expect(out.stderr).toMatch(/^airlock exec: exactly one FILE is required\n\nUsage: airlock exec --agent NAME /);
    const unknown = capture();
    expect(await execCommand(["--dev", join(dir, "ok.ts"), "--allow", "ledger.nope", "--config", config], unknown.io)).toBe(2);
    expect(unknown.out.stderr).toMatch(
      /^airlock exec: DEV MODE .*\nairlock exec: --allow names tools no upstream offers: ledger\.nope\n\nUsage: airlock exec /,
    );
  });

  it("runs a TypeScript file with inputs and allowed tools, prints the envelope as JSON, exits 0", async () => {
    const { out, io } = capture();
    const code = await execCommand(
      ["--dev", join(dir, "ok.ts"), "--input", `note=${join(dir, "note.txt")}`, "--allow", "ledger.listInvoices", "--json", "--config", config],
      io,
    );
    expect(out.stderr).toBe(`airlock exec: DEV MODE — unaudited: no policy, no review, no audit log; against ${config}.\n`);
    expect(code).toBe(0);
    const env = JSON.parse(out.stdout);
    expect(env).toMatchObject({ status: "succeeded", logs: [{ level: "log", text: "from an input" }], isolation: { level: "strict" } });
    expect(env.result).toBeGreaterThan(0);
  });

  it("type-checks TypeScript against the declarations and prints findings with line and column", async () => {
    const { out, io } = capture();
    expect(await execCommand(["--dev", join(dir, "typo.ts"), "--allow", "ledger.listInvoices", "--config", config], io)).toBe(1);
    expect(out.stderr).toContain(`${join(dir, "typo.ts")}:1:`);
    expect(out.stderr).toMatch(/error argument_type_error: TS2322: Type 'string' is not assignable to type 'number'/);
    expect(out.stderr).toContain("error argument_invalid: tools.ledger.listInvoices: limit must be integer (type)");
    const json = capture();
    await execCommand(["--dev", join(dir, "typo.ts"), "--allow", "ledger.listInvoices", "--json", "--config", config], json.io);
    expect(JSON.parse(json.out.stdout).findings).toEqual([
      expect.objectContaining({ code: "argument_invalid", line: 1 }),
      expect.objectContaining({ code: "argument_type_error", line: 1 }),
    ]);
  });

  it("exits 1 when the run fails (a tool outside --allow is CAPABILITY_DENIED)", async () => {
    const { out, io } = capture();
    expect(await execCommand(["--dev", join(dir, "refund.js"), "--allow", "ledger.listInvoices", "--config", config], io)).toBe(1);
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
    expect(await toolsCommand(["--search", "refund", "--detail", "name", "--json", "--config", config], search.io)).toBe(0);
    expect(JSON.parse(search.out.stdout).tools).toEqual(expect.arrayContaining([{ server: "ledger", name: "issueRefund" }]));
    // As text by default, as the list is: a line per tool, then the declaration at full.
    const text = capture();
    expect(await toolsCommand(["--search", "refund", "--detail", "full", "--config", config], text.io)).toBe(0);
    expect(text.out.stdout).toMatch(/^ledger\.issueRefund\b/m);
    expect(text.out.stdout).toContain("declare const tools: {");
    const none = capture();
    expect(await toolsCommand(["--search", "zzzz-nothing", "--config", config], none.io)).toBe(0);
    expect(none.out.stdout).toBe('No tool matches "zzzz-nothing".\n');
    const bad = capture();
    expect(await toolsCommand(["--detail", "everything"], bad.io)).toBe(2);
    expect(bad.out.stderr).toMatch(/^airlock tools: --detail must be one of name, summary, full, not "everything"\n\nUsage: airlock tools /);
    const noServer = capture();
    expect(await toolsCommand(["--server", "crm", "--config", config], noServer.io)).toBe(2);
    expect(noServer.out.stderr).toMatch(/^airlock tools: no server 'crm' in the config\n\nUsage: airlock tools /);
    const invalid = join(dir, "invalid.config.json");
    writeFileSync(invalid, JSON.stringify({ servers: {}, pins: { file: pinFile }, extra: true }));
    const broken = capture();
    expect(await toolsCommand(["--config", invalid], broken.io)).toBe(1);
    expect(broken.out.stderr).toMatch(
      /^airlock: warning: pins in .* is ignored.*\nairlock tools: .*invalid\.config\.json is invalid:\n {2}- \(root\): Unrecognized key: "extra"\n$/,
    );
  });
});

describe("tool pins", () => {
  const system: Actor = { type: "system", name: "test" };
  const listsInvoices = join(dir, "list.js");
  writeFileSync(listsInvoices, `return (await tools.ledger.listInvoices({ limit: 1 })).invoices.length;`);

  async function listed(configFile = config) {
    const { out, io } = capture();
    expect(await toolsCommand(["--json", "--config", configFile], io)).toBe(0);
    return { tools: JSON.parse(out.stdout) as { name: string; quarantined: boolean; quarantineReason: string | null; hash: string }[], stderr: out.stderr };
  }

  it("a config with pins loads, warns once on stderr, and no pin file is written", async () => {
    const { tools, stderr } = await listed(legacyConfig);
    expect(tools.map((t) => t.name)).toContain("listInvoices");
    expect(stderr).toBe(
      `airlock: warning: pins in ${legacyConfig} is ignored: tool pins live in the database (changed tools are accepted on the Tools page); remove the key\n`,
    );
    const run = capture();
    expect(await execCommand(["--dev", listsInvoices, "--allow-all", "--config", legacyConfig], run.io)).toBe(0);
    expect(run.out.stderr.match(/is ignored/g)).toHaveLength(1);
    expect(existsSync(pinFile)).toBe(false);
  });

  it("are the database's: a changed tool is quarantined for the CLI and the console until two admins accept it (one alone only asks)", async () => {
    // Every tool the CLI saw is pinned in the database (first sight, by the tests above).
    const rows = await db.prisma.upstreamTool.findMany({ where: { server: { name: "ledger" } } });
    expect(rows.map((r) => r.name)).toContain("listInvoices");
    // The pinned definition of listInvoices is not the one the upstream serves now.
    await db.prisma.upstreamTool.updateMany({ where: { name: "listInvoices" }, data: { pinnedHash: "0".repeat(64) } });

    const before = (await listed()).tools.find((t) => t.name === "listInvoices")!;
    expect(before).toMatchObject({ quarantined: true, quarantineReason: "hash_changed" });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ quarantined: true, schemaHash: before.hash, pinnedHash: "0".repeat(64) });
    const refused = capture();
    expect(await execCommand(["--dev", listsInvoices, "--allow-all", "--config", config], refused.io)).toBe(1);
    expect(refused.out.stdout).toContain("status: failed (CAPABILITY_DENIED)");

    // One admin alone only asks: the tool stays quarantined for the CLI.
    await db.prisma.$transaction(async (tx) => {
      await createUser(tx, system, { email: "ada@example.com", role: "admin" });
      await createUser(tx, system, { email: "alan@example.com", role: "admin" });
      await createUser(tx, system, { email: "rita@example.com", role: "reviewer" });
    });
    const accept = async (as: string, hash = row.schemaHash) => {
      const { out, io } = capture();
      const code = await runCli(["tools", "accept", "--server", "ledger", "--tool", "listInvoices", "--hash", hash, "--as", as], io);
      return { code, ...out };
    };
    expect(await accept("ada@example.com")).toMatchObject({
      code: 0,
      stdout: "Asked to accept ledger.listInvoices; a second admin's accept of the same hash pins it.\n",
    });
    expect(await accept("ada@example.com")).toMatchObject({
      code: 1,
      stderr: "airlock: You asked to accept ledger.listInvoices; a second admin must accept it.\n",
    });
    const refusal = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "auth.forbidden" }, orderBy: { id: "desc" } });
    expect(refusal.data).toMatchObject({ door: "cli:tools accept", reason: "own_request" });
    expect(await accept("rita@example.com")).toMatchObject({ code: 1, stderr: expect.stringContaining("tools:manage") });
    expect(await accept("alan@example.com", "a".repeat(64))).toMatchObject({ code: 1, stderr: expect.stringContaining("changed again") });
    expect(await accept("alan@example.com", "not-a-hash")).toMatchObject({ code: 2 });
    expect((await listed()).tools.find((t) => t.name === "listInvoices")).toMatchObject({ quarantined: true });
    const alone = capture();
    expect(await execCommand(["--dev", listsInvoices, "--allow-all", "--config", config], alone.io)).toBe(1);
    expect(alone.out.stdout).toContain("status: failed (CAPABILITY_DENIED)");

    // A second admin's accept pins it.
    expect(await accept("alan@example.com")).toMatchObject({
      code: 0,
      stdout: "Accepted ledger.listInvoices: its definition is pinned and the quarantine lifted.\n",
    });
    const after = (await listed()).tools.find((t) => t.name === "listInvoices")!;
    expect(after).toMatchObject({ quarantined: false, quarantineReason: null });
    const run = capture();
    expect(await execCommand(["--dev", listsInvoices, "--allow-all", "--json", "--config", config], run.io)).toBe(0);
    expect(JSON.parse(run.out.stdout)).toMatchObject({ status: "succeeded", result: 1 });
  });
});
