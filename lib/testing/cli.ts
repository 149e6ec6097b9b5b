/**
 * The `airlock` command line as a user runs it in tests: the real binary (bin/airlock.mjs) in a
 * child process, with only the given Airlock settings in its environment (none inherited).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { childProcessEnv } from "@/lib/env";
import { REPO_ROOT } from "@/lib/sandbox/host";

export type CliOutcome = { code: number | null; stdout: string; stderr: string };

/** Starts it; `job`: in a process group of its own, as a terminal's foreground job. */
export function startCli(args: string[], settings: Record<string, string>, options: { cwd?: string; job?: boolean } = {}) {
  const env = childProcessEnv();
  for (const key of Object.keys(env)) if (key.startsWith("AIRLOCK_") || key === "DATABASE_URL") delete env[key];
  const child = spawn(process.execPath, [join(REPO_ROOT, "bin/airlock.mjs"), ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...env, ...settings },
    detached: options.job ?? false,
  });
  const output = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  return { child, output, exited };
}

/** Runs it to its end. */
export async function runCli(args: string[], settings: Record<string, string>, cwd?: string): Promise<CliOutcome> {
  const { output, exited } = startCli(args, settings, { cwd });
  const code = await exited;
  return { code, ...output };
}
