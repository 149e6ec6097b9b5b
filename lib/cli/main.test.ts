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
    [["user", "add", "--email", "a@example.com"], /--role is required/],
    [["user", "add", "--email", "a@example.com", "--role", "root"], /--role must be one of admin, reviewer, compliance/],
    [["agent", "add", "--name", "x", "--bogus"], /Unknown option '--bogus'/],
    [["agent", "add", "--name", "x", "--owner", "o@example.com", "--expires-days", "soon"], /--expires-days must be a whole number/],
    // parseArgs kept the last of two values silently: an export of "failed" runs asked for as succeeded and failed.
    [["audit", "export", "--format", "jsonl", "--status", "succeeded", "--status", "failed"], /--status is given more than once/],
    [["audit", "export", "--format", "jsonl", "--since", "2026-02-30"], /--since must be a date or time/],
    [["audit", "export", "--format", "jsonl", "--since", "0000-01-01"], /--since must be on or after 1970-01-01/],
    // A reversed range matched nothing and exited 0, as if the log had no such events.
    [["audit", "export", "--format", "jsonl", "--since", "2026-12-06", "--until", "2026-12-01"], /--since 2026-12-06 is after --until 2026-12-01/],
  ])("%j prints usage and exits 2", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.err).toMatch(message);
    expect(io.err).toContain("Usage:");
  });

  // A service's schema named its own field (runId: Invalid UUID, exit 1); the flag's form is checked first.
  it.each([
    [["audit", "hold", "--run", "abc", "--reason", "x"], `--run must be a run id (a UUID), not "abc"`],
    [["audit", "release", "--hold", "not-a-uuid", "--reason", "x"], `--hold must be a legal hold's id (a UUID), not "not-a-uuid"`],
    [["audit", "evidence", "abc"], `RUN_ID must be a run id (a UUID), not "abc"`],
    [["audit", "verify", "--as", "ops"], `--as must be an email address, not "ops"`],
    [["skills", "revoke", "--standing", "abc", "--as", "admin@airlock.local"], `--standing must be a standing approval's id (a UUID), not "abc"`],
    [["skills", "revoke", "--standing", "00000000-0000-4000-8000-000000000000", "--as", "admin"], `--as must be an email address, not "admin"`],
    [["user", "add", "--email", "notanemail", "--role", "admin"], `--email must be an email address, not "notanemail"`],
    [["agent", "add", "--name", "x", "--owner", "x"], `--owner must be an email address, not "x"`],
    [["policy", "approve", "--version", "1", "--as", "x"], `--as must be an email address, not "x"`],
    [["tools", "accept", "--server", "s", "--tool", "t", "--hash", "a".repeat(64), "--as", "x"], `--as must be an email address, not "x"`],
    [["exec", "--agent", "bot", "--as", "x", "x.ts"], `--as must be an email address, not "x"`],
  ])("a value not of its flag's form: %j names the flag, prints usage, exits 2", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.err).toContain(message);
    expect(io.err).toContain("Usage:");
  });

  // parseArgs called a negative value ambiguous and told the user to type --flag=-5, only to get the range then.
  it.each([
    [["agent", "add", "--name", "x", "--owner", "o@example.com", "--expires-days", "-5"], `--expires-days must be a whole number from 1 to 3650 (got "-5")`],
    [["agent", "add", "--name", "x", "--owner", "o@example.com", "--expires-days", "1e2"], `--expires-days must be a whole number from 1 to 3650 (got "1e2")`],
    [["policy", "replay", "--file", "d.cedar", "--last", "-3"], `--last must be a whole number from 1 to 10000 (got "-3")`],
    [["policy", "approve", "--version", "-1", "--as", "a@example.com"], `--version must be a whole number from 1 to 2147483647 (got "-1")`],
    [["audit", "verify", "--from", "-1"], `--from must be an event id (a positive whole number), not "-1"`],
    [["exec", "--dev", "--timeout-ms", "-1", "x.js"], `--timeout-ms must be a whole number from 1 to 3600000 (got "-1")`],
    [["skills", "patterns", "--min", "-2"], `--min must be a whole number from 1 to 1000000 (got "-2")`],
  ])("a negative or non-digit number: %j names the range at once and exits 2", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.err).toContain(message);
    expect(io.err).not.toContain("ambiguous");
  });

  // A flag the command read nothing from was ignored silently.
  it.each([
    [["tools", "--detail", "full"], "--detail says how much --search answers: it needs --search Q"],
    [["tools", "--dts", "--json"], "use --dts or --json, not both"],
    [["policy", "propose", "--file", "d.cedar", "--as", "a@example.com", "--json"], "--json is not a flag of policy propose; it takes --file, --as"],
    [["policy", "validate", "--file", "d.cedar", "--last", "5"], "--last is not a flag of policy validate; it takes --file, --json"],
  ])("a flag the command would ignore: %j is refused with exit 2", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.err).toContain(message);
  });

  it.each([
    [["audit", "export", "--help"], "airlock audit export --format jsonl|csv"],
    [["exec", "--help"], "Usage: airlock exec --agent NAME"],
    [["agent", "add", "--help"], "Usage: airlock agent add --name N --owner EMAIL"],
    [["user", "add", "-h"], "Usage: airlock user add --email E"],
    [["tools", "accept", "--help"], "airlock tools accept --server S"],
    [["policy", "--help"], "airlock policy validate --file draft.cedar"],
    [["policy", "approve", "--help"], "airlock policy approve --version N"],
    [["skills", "revoke", "--help"], "Usage: airlock skills revoke --standing ID"],
    [["doctor", "--help"], "Usage: airlock doctor [--json]"],
  ])("%j prints that command's usage, not the global one, and exits 0", async (argv, usage) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(0);
    expect(io.out).toContain(usage);
    expect(io.out).not.toContain("Commands:");
    expect(io.err).toBe("");
  });

  it.each([[["--help"]], [["help"]], [["-h"]], [["agent", "--help"]], [["exec", "--help"]], [["audit", "export", "-h"]]])(
    "%j prints usage to stdout and exits 0",
    async (argv) => {
      const io = capture();
      expect(await runCli(argv, io)).toBe(0);
      expect(io.out).toMatch(/Usage:\s+airlock/);
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
    // A service's refusal names the flag the value came from, not the service's field (name, ownerEmail, password).
    [["agent", "add", "--name", "Bad Name", "--owner", "ops@example.com"], "airlock: --name must be 1-63 lower-case letters, digits or dashes"],
    [["exec", "--dev", "/nonexistent/script.js"], "airlock: cannot read /nonexistent/script.js: ENOENT"],
  ])("a value it refuses, named by its flag: %j exits 1 without usage", async (argv, message) => {
    const io = capture();
    expect(await runCli(argv, io)).toBe(1);
    expect(io.err.trim()).toBe(message);
  });

  it("a password from stdin too short for the service is named by its flag (exit 1)", async () => {
    const io = capture("short\n");
    expect(await runCli(["user", "add", "--email", "short@example.com", "--role", "admin", "--password-stdin"], io)).toBe(1);
    expect(io.err.trim()).toMatch(/^airlock: the password read by --password-stdin must be at least \d+ characters$/);
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
    // --json was accepted and ignored: the answer was text.
    const brokenJson = capture();
    expect(await runCli(["policy", "validate", "--file", broken, "--json"], brokenJson)).toBe(1);
    expect(JSON.parse(brokenJson.out)).toMatchObject({ file: broken, ok: false, errors: [{ line: expect.any(Number), column: expect.any(Number) }] });
    expect(brokenJson.err).toBe("");

    const good = join(dir, "good.cedar");
    await writeFile(good, defaultPolicyText());
    const goodJson = capture();
    expect(await runCli(["policy", "validate", "--file", good, "--json"], goodJson)).toBe(0);
    expect(JSON.parse(goodJson.out)).toMatchObject({ file: good, ok: true, errors: [] });
    const replayed = capture();
    expect(await runCli(["policy", "replay", "--file", good, "--last", "5"], replayed)).toBe(0);
    expect(replayed.out).toContain("proposal(s) replayed, 0 would be decided differently");
    const published = capture();
    expect(await runCli(["policy", "publish", "--file", good, "--as", "ops@example.com"], published)).toBe(0);
    expect(published.out).toMatch(/Proposed policy version \d+; it is published when a second admin approves it/);
    expect(await runCli(["policy", "replay", "--file", good, "--last", "0"], capture())).toBe(2);
  });
});
