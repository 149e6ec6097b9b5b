/**
 * Operating-system plumbing for lib/db/postgres-server.ts: running PostgreSQL's binaries as the
 * `postgres` user when we are root (PostgreSQL refuses to run as root), process liveness and
 * signals that treat a zombie as gone, a free loopback port, and reading a cluster's own files.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { chown, readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";

export const isRoot = () => process.getuid?.() === 0;

export interface Run {
  code: number | null;
  output: string;
}

export function run(command: string, args: string[]): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, output }));
  });
}

/** Runs a PostgreSQL binary as the `postgres` user when we are root, as ourselves otherwise. */
export function runAsPostgres(binary: string, args: string[]): Promise<Run> {
  return isRoot() ? run("runuser", ["-u", "postgres", "--", binary, ...args]) : run(binary, args);
}

export async function postgresIds(): Promise<{ uid: number; gid: number } | undefined> {
  const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
  if (uid.code !== 0 || gid.code !== 0) return undefined;
  return { uid: Number(uid.output.trim()), gid: Number(gid.output.trim()) };
}

export async function chownToPostgres(path: string): Promise<void> {
  if (!isRoot()) return;
  const ids = await postgresIds();
  if (ids) await chown(path, ids.uid, ids.gid);
}

export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePromise(address.port) : reject(new Error("no port"))));
    });
  });
}

/** A zombie (exited, not yet reaped by whoever inherited it) counts as gone. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    // No /proc (not Linux), or the process is gone.
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

export async function postmasterPid(clusterDir: string): Promise<number | undefined> {
  const text = await readFile(join(clusterDir, "postmaster.pid"), "utf8").catch(() => undefined);
  const pid = Number(text?.split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

export async function readClusterMajor(clusterDir: string): Promise<number | undefined> {
  const text = await readFile(join(clusterDir, "PG_VERSION"), "utf8").catch(() => undefined);
  return text === undefined ? undefined : Number(text.trim());
}

export async function tail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}
