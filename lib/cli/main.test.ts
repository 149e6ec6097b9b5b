import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { authenticateAgentToken } from "@/lib/auth/agents";
import { signInWithPassword } from "@/lib/auth/users";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { CliIo } from "./io";
import { runCli } from "./main";

function capture(stdin = ""): CliIo & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    readStdin: async () => stdin,
  };
  return io;
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
});
afterAll(() => db?.drop());

describe("airlock CLI", () => {
  it.each([
    [[], /Usage: airlock/],
    [["frob"], /unknown command "frob"/],
    [["user", "add", "--email", "a@b.c"], /--role is required/],
    [["user", "add", "--email", "a@b.c", "--role", "root"], /--role must be one of admin, reviewer, compliance/],
    [["agent", "add", "--name", "x", "--bogus"], /Unknown option '--bogus'/],
    [["agent", "add", "--name", "x", "--owner", "o@x.y", "--expires-days", "soon"], /--expires-days must be a whole number/],
    // parseArgs kept the last of two values silently: an export of "failed" runs asked for as succeeded and failed.
    [["audit", "export", "--format", "jsonl", "--status", "succeeded", "--status", "failed"], /--status is given more than once/],
    [["audit", "export", "--format", "jsonl", "--since", "2026-02-30"], /--since must be a date or time/],
    [["audit", "export", "--format", "jsonl", "--since", "0000-01-01"], /--since must be on or after 1970-01-01/],
  ])("%j prints usage and exits 2", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.err).toMatch(message);
    expect(io.err).toContain("Usage:");
  });

  it.each([[["--help"]], [["help"]], [["-h"]], [["agent", "--help"]], [["exec", "--help"]], [["audit", "export", "-h"]]])(
    "%j prints usage to stdout and exits 0",
    async (argv) => {
      const io = capture();
      expect(await runCli(argv, io)).toBe(0);
      expect(io.out).toContain("Usage: airlock");
      expect(io.err).toBe("");
    },
  );

  it("a help flag after another flag is that flag's value, not a request for usage", async () => {
    const io = capture();
    expect(await runCli(["audit", "release", "--hold", "00000000-0000-4000-8000-000000000000", "--reason", "-h"], io)).toBe(2);
    expect(io.out).toBe("");
    expect(io.err).toContain("--reason");
  });

  it("adds a user with a password from stdin, who can then sign in", async () => {
    const io = capture("a long enough password\n");
    expect(await runCli(["user", "add", "--email", "ops@example.com", "--role", "admin", "--password-stdin"], io)).toBe(0);
    expect(io.out).toContain("Added admin ops@example.com");
    expect(io.out).not.toContain("a long enough password");
    expect(await signInWithPassword(db.prisma, "ops@example.com", "a long enough password", { address: null })).toMatchObject({ ok: true });
  });

  it("adds an agent and prints a working token once; revoke stops it", async () => {
    const io = capture();
    expect(await runCli(["agent", "add", "--name", "cli-bot", "--owner", "ops@example.com"], io)).toBe(0);
    const token = /Token \(shown once, store it now\): (alk_\S+)/.exec(io.out)?.[1];
    expect(token).toBeDefined();
    expect(await authenticateAgentToken(db.prisma, token!)).toMatchObject({ name: "cli-bot" });

    expect(await runCli(["agent", "revoke", "--name", "cli-bot"], capture())).toBe(0);
    expect(await authenticateAgentToken(db.prisma, token!)).toBeNull();
  });

  it("reports a typed failure in one line with exit 1", async () => {
    const io = capture();
    expect(await runCli(["agent", "add", "--name", "orphan", "--owner", "nobody@example.com"], io)).toBe(1);
    expect(io.err.trim()).toBe("airlock: No user with email nobody@example.com; add the owner first.");
  });

  it.each([
    [
      ["agent", "add", "--name", "x", "--owner", "ops@example.com", "--scopes", "runs:submit,runs:fly"],
      `airlock: --scopes: "runs:fly" is not an agent's scope; they are runs:submit, runs:read, tools:read, inputs:read`,
    ],
    [["audit", "release", "--hold", "not-a-uuid", "--reason", "x"], `airlock: --hold: "not-a-uuid" is not a legal hold's id (a UUID)`],
    [["exec", "--dev", "/nonexistent/script.js"], "airlock: cannot read /nonexistent/script.js: ENOENT"],
  ])("a value it refuses, named by its flag: %j exits 1 without usage", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(1);
    expect(io.err.trim()).toBe(message);
  });

  it("db migrate says the database is up to date", async () => {
    const io = capture();
    expect(await runCli(["db", "migrate"], io)).toBe(0);
    expect(io.out).toBe("Database is up to date.\n");
  });

  it("policy validate names the line and column of a broken draft; replay and publish (which proposes) work on a good one", async () => {
    const { mkdtemp, writeFile } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { defaultPolicyText } = await import("@/lib/policy/policy-set");
    const dir = await mkdtemp(join(tmpdir(), "airlock-policy-"));
    const broken = join(dir, "broken.cedar");
    await writeFile(broken, '@id("x")\n@reason("y")\npermit (principal, action, resource\n');
    const io = capture();
    expect(await runCli(["policy", "validate", "--file", broken], io)).toBe(1);
    expect(io.err).toMatch(new RegExp(`${broken}:\\d+:\\d+: error: `));

    const good = join(dir, "good.cedar");
    await writeFile(good, defaultPolicyText());
    const replayed = capture();
    expect(await runCli(["policy", "replay", "--file", good, "--last", "5"], replayed)).toBe(0);
    expect(replayed.out).toContain("proposal(s) replayed, 0 would be decided differently");
    const published = capture();
    expect(await runCli(["policy", "publish", "--file", good, "--as", "ops@example.com"], published)).toBe(0);
    expect(published.out).toMatch(/Proposed policy version \d+; it is published when a second admin approves it/);
    expect(await runCli(["policy", "replay", "--file", good, "--last", "0"], capture())).toBe(2);
  });
});
