/**
 * The spawn helper (./spawner.ts) with real processes: nothing a child writes is lost or read by
 * the helper, exits are reported as they happened, a failed spawn or command is an error, and a
 * helper that dies takes its children with it and is replaced.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { EMPTY_ENV } from "./host";
import { execRemote, spawnHelperPid, spawnRemote, type RemoteChild } from "./spawner";

const NODE = process.execPath;

function collect(child: RemoteChild): Promise<{ stdout: Buffer; stderr: string; code: number | null; signal: string | null }> {
  const out: Buffer[] = [];
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve) =>
    child.once("close", (code: number | null, signal: string | null) => resolve({ stdout: Buffer.concat(out), stderr: err, code, signal })),
  );
}

function processState(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0]!;
  } catch {
    return "gone";
  }
}

const node = (source: string) => ({ file: NODE, args: ["-e", source], cwd: "/", env: EMPTY_ENV });

describe("the spawn helper", () => {
  it("hands over every byte a child writes at once, before it could be read elsewhere, and its exit code", async () => {
    // 4 MiB from the first instant (a shell starts in a millisecond, far past a pipe's buffer): nothing
    // may be dropped while the pipes are handed over.
    for (let i = 0; i < 5; i++) {
      const script = `head -c ${4 << 20} /dev/zero | tr '\\0' a; printf bye >&2; exit 3`;
      const child = await spawnRemote({ file: "/bin/sh", args: ["-c", script], cwd: "/", env: EMPTY_ENV });
      const { stdout, stderr, code, signal } = await collect(child);
      expect(stdout.length).toBe(4 << 20);
      expect(stdout.every((b) => b === 97)).toBe(true);
      expect({ stderr, code, signal }).toEqual({ stderr: "bye", code: 3, signal: null });
    }
  });

  it("talks both ways over the child's stdin and stdout, and reports a kill of its process group", async () => {
    const child = await spawnRemote(node(`process.stdin.on("data", (d) => process.stdout.write("echo:" + d));`));
    const done = collect(child);
    child.stdin.write("ping");
    await new Promise((resolve) => child.stdout.once("data", resolve));
    process.kill(-child.pid, "SIGKILL");
    const { stdout, signal } = await done;
    expect(stdout.toString()).toBe("echo:ping");
    expect(signal).toBe("SIGKILL");
  });

  it("rejects a spawn that cannot start and a command that fails, with what it said", async () => {
    await expect(spawnRemote({ file: "/nonexistent/binary", args: [], cwd: "/", env: EMPTY_ENV })).rejects.toThrow(/ENOENT/);
    await expect(execRemote(NODE, ["-e", `process.stderr.write("not mounted"); process.exit(32)`], { env: EMPTY_ENV, timeout: 10_000 })).rejects.toMatchObject({
      code: 32,
      stderr: "not mounted",
    });
    expect(await execRemote(NODE, ["-e", `process.stdout.write("ok")`], { env: EMPTY_ENV, timeout: 10_000 })).toEqual({ stdout: "ok", stderr: "" });
  });

  it("kills the children of a helper that dies, reports them exited, and starts a new helper", async () => {
    const child = await spawnRemote(node(`setInterval(() => {}, 1000);`));
    const done = collect(child);
    const helper = spawnHelperPid()!;
    process.kill(helper, "SIGKILL");
    const { signal } = await done;
    expect(signal).toBe("SIGKILL");
    // The child itself is dead (gone, or a zombie left to init), not only reported so.
    await expect.poll(() => processState(child.pid), { timeout: 5_000 }).toMatch(/^(gone|Z)$/);
    const next = await spawnRemote(node(`process.stdout.write("again")`));
    expect(spawnHelperPid()).not.toBe(helper);
    expect((await collect(next)).stdout.toString()).toBe("again");
  });
});
