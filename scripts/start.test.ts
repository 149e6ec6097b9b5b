/**
 * `npm start`'s sandbox check (scripts/start.ts `checkSandbox`), in a real process that really
 * exits: on a host where strict cannot be met it refuses with one line and exit 1; with
 * `allowDegraded` it says it starts degraded; and `npm start` itself refuses a config whose
 * sandbox section is invalid before it starts anything, and a data directory it cannot make (under
 * /proc, where Node's recursive mkdir used to spin forever) with one line. Bubblewrap cannot be uninstalled for a
 * test, so the check is given this host's probed facts without it.
 */
import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { childProcessEnv } from "@/lib/env";

const root = join(import.meta.dirname, "..");

function run(args: string[], env: NodeJS.ProcessEnv = childProcessEnv()): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--conditions=react-server", "--import", "tsx", ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs checkSandbox for a process that executes runs, on this host as it would be without bubblewrap. */
function checkWithoutBwrap(sandbox: object) {
  const script = `
    const { detectHost } = await import("./lib/sandbox/host.ts");
    const { checkSandbox } = await import("./scripts/start.ts");
    const facts = await detectHost();
    await checkSandbox(JSON.parse(process.argv[1]), true, async () => ({ ...facts, bwrapPath: null }));
    console.log("check passed");`;
  return run(["--input-type=module", "-e", script, JSON.stringify(sandbox)]);
}

describe("npm start's sandbox check", () => {
  it("refuses to start at strict without bubblewrap: one line on stderr, exit 1", async () => {
    const { code, stdout, stderr } = await checkWithoutBwrap({ isolation: "strict", poolSize: 2 });
    expect(code).toBe(1);
    expect(stderr).toBe(
      'airlock: sandbox isolation "strict" cannot be met: bubblewrap (bwrap) is missing or cannot create namespaces on this host. Install it (apt-get install -y bubblewrap), or set "sandbox": { "allowDegraded": true } in airlock.config.json to start at permission-only.\n',
    );
    expect(stdout).not.toContain("check passed");
  }, 60_000);

  it("with allowDegraded, starts and prints that it runs degraded", async () => {
    const { code, stdout, stderr } = await checkWithoutBwrap({ isolation: "strict", poolSize: 2, allowDegraded: true });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^Sandbox isolation: permission-only \(DEGRADED: bubblewrap \(bwrap\) is missing .*not read-only\)\.\ncheck passed\n$/);
  }, 60_000);

  it("npm start refuses an invalid sandbox section before starting anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "airlock-start-"));
    const config = join(dir, "airlock.config.json");
    await writeFile(config, JSON.stringify({ servers: {}, sandbox: { allowDegrade: true } }));
    const env: NodeJS.ProcessEnv = { ...childProcessEnv(), AIRLOCK_DATA_DIR: join(dir, "data"), AIRLOCK_CONFIG: config, PORT: String(await freePort()) };
    delete env.DATABASE_URL;
    const { code, stdout, stderr } = await run(["scripts/start.ts"], env);
    expect(code).toBe(1);
    expect(stderr).toBe(`airlock: ${config} is invalid:\n  - sandbox: Unrecognized key: "allowDegrade"\n`);
    expect(stdout).not.toContain("PostgreSQL");
  }, 60_000);

  it("npm start refuses a data directory it cannot make with one line, exit 1", async () => {
    const env: NodeJS.ProcessEnv = { ...childProcessEnv(), AIRLOCK_DATA_DIR: "/proc/airlock-data", PORT: String(await freePort()) };
    delete env.DATABASE_URL;
    const { code, stdout, stderr } = await run(["scripts/start.ts"], env);
    expect(code).toBe(1);
    expect(stderr).toBe(
      "airlock: AIRLOCK_DATA_DIR=/proc/airlock-data cannot be used as the data directory: ENOENT: no such file or directory, mkdir '/proc/airlock-data'. Point it at a directory this user may create and write.\n",
    );
    expect(stdout).toBe("");
  }, 60_000);
});
