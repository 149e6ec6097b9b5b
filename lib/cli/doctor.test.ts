/**
 * `airlock doctor` against real setups: a deliberately bad one (the app connecting as the
 * superuser, the audit keys beside the database, an unmigrated database) fails, naming each
 * problem; a sound one (an unprivileged app role, keys elsewhere) passes those checks.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureAppRole, grantAppPrivileges, withCredentials } from "@/lib/db/roles";
import { setEnvForChildren } from "@/lib/env";
import { withAdminClient } from "@/lib/testing/database-url";
import { REPO_ROOT } from "@/lib/sandbox/host";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Check } from "./doctor";
import { runCli } from "./main";

function capture() {
  const io = { out: "", err: "", stdout: (t: string) => void (io.out += t), stderr: (t: string) => void (io.err += t), readStdin: async () => "" };
  return io;
}

async function doctor(env: Record<string, string>): Promise<{ code: number; out: string; checks: Check[] }> {
  setEnvForChildren(env);
  const text = capture();
  const code = await runCli(["doctor"], text);
  const json = capture();
  expect(await runCli(["doctor", "--json"], json)).toBe(code);
  const parsed = JSON.parse(json.out) as { ok: boolean; checks: Check[] };
  expect(parsed.ok).toBe(code === 0);
  return { code, out: text.out, checks: parsed.checks };
}

const status = (checks: Check[], name: string) => checks.find((check) => check.name === name)?.status;

let db: TestDatabase;
let dataDir: string;
beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "airlock-doctor-"));
});

/** Where the key and the checkpoints go by default: inside the data directory, beside the database. */
const besideTheDatabase = () => ({
  AIRLOCK_AUDIT_KEY_FILE: join(dataDir, "audit-signing-key.pem"),
  AIRLOCK_AUDIT_CHECKPOINT_DIR: join(dataDir, "audit-checkpoints"),
});
afterAll(() => db?.drop());

describe("airlock doctor", () => {
  it("fails a superuser app role and audit keys inside the data directory, naming both, and exits non-zero", async () => {
    const { code, out, checks } = await doctor({ DATABASE_URL: db.url, AIRLOCK_DATA_DIR: dataDir, ...besideTheDatabase() });
    expect(code).toBe(1);
    expect(status(checks, "database role")).toBe("FAIL");
    expect(out).toMatch(/FAIL {2}database role: .*superuser/);
    expect(status(checks, "audit keys")).toBe("FAIL");
    expect(out).toMatch(/fix: Set AIRLOCK_AUDIT_KEY_FILE and AIRLOCK_AUDIT_CHECKPOINT_DIR/);
    expect(status(checks, "migrations")).toBe("OK");
    expect(status(checks, "clock")).toBe("OK");
    // The demo ledger's tools were never accepted in this database: quarantined, named.
    expect(status(checks, "upstreams")).toBe("WARN");
    expect(out).toContain("ledger.listInvoices (new_tool)");
  });

  it("fails an audit signing key file that is not a key, naming the file and its variable; the commands that sign say the same", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "airlock-doctor-keys-"));
    const keyFile = join(elsewhere, "garbage.pem");
    await writeFile(keyFile, "not a key\n");
    const settings = {
      DATABASE_URL: db.url,
      AIRLOCK_DATA_DIR: dataDir,
      AIRLOCK_AUDIT_KEY_FILE: keyFile,
      AIRLOCK_AUDIT_CHECKPOINT_DIR: join(elsewhere, "checkpoints"),
    };
    const { code, checks, out } = await doctor(settings);
    expect(code).toBe(1);
    expect(status(checks, "audit keys")).toBe("FAIL");
    expect(out).toContain(`the audit signing key ${keyFile} (AIRLOCK_AUDIT_KEY_FILE) is not a PEM private key`);
    const publicKey = capture();
    expect(await runCli(["audit", "public-key"], publicKey)).toBe(1);
    expect(publicKey.err).toContain(`the audit signing key ${keyFile} (AIRLOCK_AUDIT_KEY_FILE) is not a PEM private key`);
  });

  it("names every upstream that does not answer, not only the first, and still checks the others", async () => {
    const config = join(await mkdtemp(join(tmpdir(), "airlock-doctor-config-")), "airlock.config.json");
    const ledger = {
      transport: "stdio",
      command: join(REPO_ROOT, "node_modules/.bin/tsx"),
      args: [join(REPO_ROOT, "lib/demo/ledger/server.ts")],
      dataClass: "internal",
    };
    await writeFile(
      config,
      JSON.stringify({
        servers: {
          ledger: { ...ledger, tools: { listCustomerz: { dataClass: "pii" } } },
          weather: { transport: "http", url: "http://127.0.0.1:9/mcp", dataClass: "internal" },
          ghost: { transport: "stdio", command: "/nonexistent/ghost-server", dataClass: "internal" },
        },
      }),
    );
    try {
      const { checks, out } = await doctor({ DATABASE_URL: db.url, AIRLOCK_DATA_DIR: dataDir, ...besideTheDatabase(), AIRLOCK_CONFIG: config });
      expect(status(checks, "upstreams")).toBe("FAIL");
      expect(out).toMatch(/FAIL {2}upstreams: 1 server\(s\) answered, \d+ tools; .*upstream 'weather' failed to connect/);
      expect(out).toContain("upstream 'ghost' failed to connect");
      // The one that answered is still checked: its misspelt setting is named.
      expect(out).toContain("servers.ledger.tools.listCustomerz names no tool 'ledger' lists (did you mean listCustomers?)");
    } finally {
      // Empty is unset (lib/env.ts): the other tests' demo configuration.
      setEnvForChildren({ AIRLOCK_CONFIG: "" });
    }
  });

  it("fails a database that lacks this build's migrations, with the command that applies them", async () => {
    const empty = await createTestDatabase({ empty: true });
    try {
      const { code, checks, out } = await doctor({ DATABASE_URL: empty.url, AIRLOCK_DATA_DIR: dataDir, ...besideTheDatabase() });
      expect(code).toBe(1);
      expect(status(checks, "migrations")).toBe("FAIL");
      expect(out).toMatch(/FAIL {2}migrations: \d+ not applied: 20261130050608_init,/);
      expect(out).toContain("npx airlock db migrate");
    } finally {
      await empty.drop();
    }
  });

  describe("a sound setup", () => {
    const role = `airlock_doc_${randomBytes(4).toString("hex")}`;
    const { adminUrl } = inject("airlockDatabase");
    let appUrl: string;
    beforeAll(async () => {
      const password = randomBytes(12).toString("hex");
      await ensureAppRole(adminUrl, role, password);
      await grantAppPrivileges(db.url, role);
      appUrl = withCredentials(db.url, role, password);
    });
    afterAll(async () => {
      await db.prisma.$executeRawUnsafe(`DROP OWNED BY "${role}"`).catch(() => {});
      await withAdminClient(adminUrl, (client) => client.query(`DROP ROLE IF EXISTS "${role}"`)).catch(() => {});
    });

    it("passes the role and key checks when the app is unprivileged and the keys live elsewhere", async () => {
      const keys = await mkdtemp(join(tmpdir(), "airlock-doctor-keys-"));
      const { code, checks } = await doctor({
        DATABASE_URL: appUrl,
        AIRLOCK_DATA_DIR: dataDir,
        AIRLOCK_AUDIT_KEY_FILE: join(keys, "key.pem"),
        AIRLOCK_AUDIT_CHECKPOINT_DIR: join(keys, "checkpoints"),
      });
      expect(checks.map((c) => [c.name, c.status])).toEqual([
        ["sandbox", "OK"],
        ["database role", "OK"],
        ["audit keys", "OK"],
        ["clock", "OK"],
        ["migrations", "OK"],
        ["upstreams", "WARN"],
      ]);
      expect(code).toBe(0);
      expect(checks[0]?.detail).toMatch(/^Sandbox isolation: strict/);
    });

    it("does not probe a sandbox for a web process that executes no runs", async () => {
      const { checks } = await doctor({ DATABASE_URL: appUrl, AIRLOCK_IN_PROCESS_WORKER: "false" });
      expect(checks[0]).toEqual({ name: "sandbox", status: "OK", detail: expect.stringContaining("executes no runs (AIRLOCK_IN_PROCESS_WORKER=false)") });
      setEnvForChildren({ AIRLOCK_IN_PROCESS_WORKER: "true" });
    });
  });
});
