/**
 * The CLI never creates a database when it reads one: the real `airlock` binary (bin/airlock.mjs,
 * a child process) run for `audit verify`, `audit export` and `exec --agent` where there is no
 * Airlock database fails with one line naming where it looked, exit 1, and leaves nothing behind —
 * no folder, no PostgreSQL cluster, no database, no schema. Before, `audit verify` on an empty data
 * directory made a cluster and reported "OK: 0 event(s) verified".
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { isAlive } from "@/lib/db/postgres-process";
import { existingClusterDir, startPostgres } from "@/lib/db/postgres-server";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { withAdminClient, withDatabase } from "@/lib/testing/database-url";
import { runCli, startCli as startTestCli } from "@/lib/testing/cli";

const dir = mkdtempSync(join(tmpdir(), "airlock-cli-db-test-"));
// Reachable by the postgres OS user (mkdtemp makes it 0700), so the clusters made here live under
// it and go with it, instead of moving to /var/lib/airlock and staying there (lib/db/postgres-server.ts).
chmodSync(dir, 0o711);
const script = join(dir, "script.js");
writeFileSync(script, "return 1;");
const databases: TestDatabase[] = [];

afterAll(async () => {
  for (const database of databases) await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI as a user runs it; `job`: as a terminal's foreground job. */
const startCli = (args: string[], settings: Record<string, string>, job = false) => startTestCli(args, settings, { job });
const airlock = (args: string[], settings: Record<string, string>) => runCli(args, settings);

/**
 * `audit verify` on a migrated data directory, started as a terminal's foreground job and caught
 * the moment its PostgreSQL serves (pg_ctl has returned; the postmaster runs in a session of its
 * own, which a signal to the job does not reach) while the command prepares it (migrations, grants).
 */
async function verifyCaughtPreparing(name: string) {
  const dataDir = join(dir, name);
  mkdirSync(dataDir);
  expect((await airlock(["db", "migrate"], { AIRLOCK_DATA_DIR: dataDir })).code).toBe(0);
  const pidFile = join(existingClusterDir(dataDir)!, "pgdata", "postmaster.pid");
  const started = startCli(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir }, true);
  const deadline = Date.now() + 30_000;
  while (!(existsSync(pidFile) && /\nready\s*$/.test(readFileSync(pidFile, "utf8"))) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return { ...started, dataDir, postmaster: Number(readFileSync(pidFile, "utf8").split("\n")[0]) };
}

const READS = [
  ["audit", "verify"],
  ["audit", "export", "--format", "jsonl"],
  ["exec", "--agent", "bot", script],
];

describe("reading where there is no database", () => {
  it.each(READS)(
    "%s %s … in an empty data directory: one line naming it, exit 1, and the directory stays empty",
    async (...args) => {
      const dataDir = join(dir, `empty-${args[1]!.replace(/\W/g, "")}`);
      mkdirSync(dataDir);
      const result = await airlock(args, { AIRLOCK_DATA_DIR: dataDir });
      expect(result).toEqual({
        code: 1,
        stdout: "",
        stderr: `airlock: No Airlock database in ${dataDir}: no PostgreSQL cluster there (set AIRLOCK_DATA_DIR to the server's data directory, or DATABASE_URL). Nothing was created.\n`,
      });
      expect(readdirSync(dataDir)).toEqual([]);
    },
    60_000,
  );

  it("an npm start killed outright left its database running: the command stops it, as the next npm start would, and runs", async () => {
    const dataDir = join(dir, "left-running");
    mkdirSync(dataDir);
    expect((await airlock(["db", "migrate"], { AIRLOCK_DATA_DIR: dataDir })).code).toBe(0);
    const leftover = await startPostgres({ persistent: true, dataDir: existingClusterDir(dataDir)! });
    // What npm start records, naming a start that is gone (the pid of a process that has exited).
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid;
    const record = (postgresPid: number) => JSON.stringify({ url: leftover.url, ownerUrl: leftover.url, pid: gone, postgresPid });
    // A server the dead start did not run (another command's, a new start's) is not stopped: the command fails on its files instead.
    writeFileSync(join(dataDir, "postgres.json"), record(leftover.pid + 1));
    const refused = await airlock(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).not.toContain("stopped the embedded PostgreSQL");
    writeFileSync(join(dataDir, "postgres.json"), record(leftover.pid));
    const result = await airlock(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir }).finally(() => leftover.stop().catch(() => undefined));
    expect(result.stderr).toContain(`airlock: stopped the embedded PostgreSQL (process ${leftover.pid}) that an earlier npm start left running.`);
    expect(result.stdout).toMatch(/^OK: /);
    expect(result.code).toBe(0);
  }, 120_000);

  it("Ctrl-C while the command prepares its database: the database is stopped too, and the next command runs", async () => {
    const { child, output, exited, dataDir, postmaster } = await verifyCaughtPreparing("interrupted");
    // Ctrl-C signals every process of the job; the wrapper (bin/airlock.mjs) waits for the command,
    // which exits 130 once its database has stopped.
    process.kill(-child.pid!, "SIGINT");
    expect(await exited).toBe(130);
    expect(output.stdout).not.toContain("OK:");
    expect(output.stderr).toContain("airlock: interrupted; stopping the database this command started.");
    expect(isAlive(postmaster)).toBe(false);
    const next = await airlock(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir });
    expect(next.code).toBe(0);
    expect(next.stdout).toMatch(/^OK: /);
  }, 120_000);

  it("a command killed outright (SIGKILL) while it holds its database: the database stops too, and the next command runs", async () => {
    const { child, exited, dataDir, postmaster } = await verifyCaughtPreparing("killed");
    // Every process of the command at once, with no chance to clean up (its watchdog, started
    // before the server, is not among them).
    process.kill(-child.pid!, "SIGKILL");
    await exited;
    const stopped = Date.now() + 30_000;
    while (isAlive(postmaster) && Date.now() < stopped) await new Promise((r) => setTimeout(r, 100));
    expect(isAlive(postmaster)).toBe(false);
    const next = await airlock(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir });
    expect(next.code).toBe(0);
    expect(next.stdout).toMatch(/^OK: /);
  }, 120_000);

  it("links a command prints name the console the running npm start serves, on the port it was given", async () => {
    const { db, agentId } = await databaseWithAgent("linker");
    databases.push(db);
    await insertRun(db, agentId, { status: "succeeded" });
    const dataDir = join(dir, "running-start");
    mkdirSync(dataDir);
    // What a running npm start on port 3355 records (this test process stands for it: it is alive).
    writeFileSync(join(dataDir, "postgres.json"), JSON.stringify({ url: db.url, ownerUrl: db.url, pid: process.pid, consoleUrl: "http://127.0.0.1:3355" }));
    const result = await airlock(["audit", "export", "--format", "csv", "--per-run"], { AIRLOCK_DATA_DIR: dataDir });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/http:\/\/127\.0\.0\.1:3355\/audit\/runs\/[0-9a-f-]{36}/);
    expect(result.stdout).not.toContain(":3000/");
  }, 60_000);

  it("a data directory that does not exist is not created", async () => {
    const dataDir = join(dir, "never", "made");
    const result = await airlock(["audit", "verify"], { AIRLOCK_DATA_DIR: dataDir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`No Airlock database in ${dataDir}: `);
    expect(existsSync(join(dir, "never"))).toBe(false);
  }, 60_000);

  it("DATABASE_URL naming a database that does not exist: named without its password, and not created", async () => {
    const { adminUrl } = inject("airlockDatabase");
    const url = withDatabase(adminUrl, "airlock_cli_missing_db");
    const shown = new URL(url);
    shown.password = "";
    const result = await airlock(["audit", "verify"], { DATABASE_URL: url });
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toBe(`airlock: No Airlock database at ${shown.toString()}: that database does not exist. Nothing was created.\n`);
    if (new URL(url).password) expect(result.stderr).not.toContain(new URL(url).password);
    const found = await withAdminClient(adminUrl, (client) => client.query(`SELECT 1 FROM pg_database WHERE datname = 'airlock_cli_missing_db'`));
    expect(found.rowCount).toBe(0);
  }, 60_000);

  it("DATABASE_URL naming an empty database: no Airlock schema, and none is made", async () => {
    const empty = await createTestDatabase({ empty: true });
    databases.push(empty);
    const result = await airlock(["audit", "export", "--format", "csv"], { DATABASE_URL: empty.url });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^airlock: No Airlock database at .*: the database has no Airlock schema \(`npx airlock db migrate` or `npm start` makes one\)\. Nothing was created\.\n$/,
    );
    const tables = await empty.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
    expect(tables[0]!.n).toBe(0);
  }, 60_000);
});
