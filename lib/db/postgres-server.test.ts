import { chmod, mkdir, mkdtemp, readdir, readlink, readFile, rm } from "node:fs/promises";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startPostgres, type PostgresServer } from "@/lib/db/postgres-server";

/** Live (non-zombie) processes started on `dataDir`: the postmaster names it in its command line,
 *  and every backend/auxiliary process has its working directory inside it. */
async function processesOn(dataDir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const [cmdline, cwd] = await Promise.all([readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => ""), readlink(`/proc/${entry}/cwd`).catch(() => "")]);
    if (cmdline.includes(dataDir) || cwd.startsWith(dataDir)) found.push(Number(entry));
  }
  return found;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

const hasSystemPostgres = existsSync("/usr/lib/postgresql");

describe.each([...(hasSystemPostgres ? (["system"] as const) : []), "embedded" as const])("startPostgres (%s binaries)", (engine) => {
  it("starts a throwaway server and stop() leaves no process and no files", async () => {
    const server = await startPostgres({ persistent: false, engine });
    expect(server.engine).toBe(engine);
    expect(server.url).toMatch(/^postgres:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/postgres$/);
    const [settings] = await query<{ fsync: string }>(server.url, "SELECT current_setting('fsync') AS fsync");
    expect(settings?.fsync).toBe("off");
    expect(await processesOn(server.dataDir)).toContain(server.pid);

    await server.stop();
    expect(await processesOn(server.dataDir)).toEqual([]);
    expect(existsSync(server.dataDir)).toBe(false);
    await server.stop(); // idempotent
  });
});

describe("a throwaway server whose owner is SIGKILLed", () => {
  it("is shut down and deleted by its watchdog", async () => {
    const fixture = fileURLToPath(new URL("./test-fixtures/start-throwaway.ts", import.meta.url));
    // node itself, not the tsx wrapper: the wrapper runs the script in a child node process.
    const owner = spawn(process.execPath, ["--import", "tsx", fixture], { stdio: ["ignore", "pipe", "inherit"] });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      owner.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
      });
      owner.on("exit", (code) => reject(new Error(`fixture exited with ${code}`)));
    });
    const { dataDir, pid } = JSON.parse(line) as { dataDir: string; pid: number };
    expect(await processesOn(dataDir)).toContain(pid);

    owner.kill("SIGKILL");
    expect(await new Promise((resolve) => owner.on("exit", (_code, signal) => resolve(signal)))).toBe("SIGKILL");
    const deadline = Date.now() + 10_000;
    while ((await processesOn(dataDir)).length > 0 || existsSync(dataDir)) {
      if (Date.now() > deadline) throw new Error(`still running or present: ${dataDir}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});

describe("startPostgres (persistent)", () => {
  it("keeps its data across restarts", async () => {
    const parent = await mkdtemp(join(tmpdir(), "airlock-pg-test-"));
    await chmod(parent, 0o755); // like a project folder: the postgres OS user may traverse it
    scratch.push(parent);
    const dataDir = join(parent, "data");
    let server: PostgresServer | undefined = await startPostgres({ persistent: true, dataDir });
    try {
      await query(server.url, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')");
      await server.stop();
      expect(await processesOn(dataDir)).toEqual([]);
      expect(existsSync(join(dataDir, "pgdata", "PG_VERSION"))).toBe(true);

      server = await startPostgres({ persistent: true, dataDir });
      expect(await query(server.url, "SELECT v FROM kept")).toEqual([{ v: "still here" }]);
      await server.stop();
      expect(await processesOn(dataDir)).toEqual([]);
      server = undefined;
    } finally {
      await server?.stop();
    }
  });

  it.runIf(process.getuid?.() === 0 && hasSystemPostgres)("says so when the postgres OS user cannot reach the data directory", async () => {
    const privateParent = await mkdtemp(join(tmpdir(), "airlock-pg-private-")); // mode 0700, root's
    scratch.push(privateParent);
    const dataDir = join(privateParent, "data");
    await mkdir(dataDir);
    await expect(startPostgres({ persistent: true, dataDir, engine: "system" })).rejects.toThrow(/OS user "postgres", which cannot reach .*AIRLOCK_DATA_DIR/s);
    expect(await processesOn(dataDir)).toEqual([]);
  });
});
