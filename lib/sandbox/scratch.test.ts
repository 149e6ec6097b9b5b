/**
 * What a run leaves on the host, in real sandboxes started as root (the host mounts each scratch):
 * the inode cap of the scratch and the host's measurement of it, the modes of staged files while
 * a run executes, and that no mount and no directory outlives a run, however it ends (checked
 * after every test, with a benign run first). Only cold runs here, so this process's members are
 * exactly the runs of the test.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createSandboxPool, membersTornDown, runInSandbox, type CallTool, type IsolationLevel } from "./index";
import { detectHost } from "./host";
import { SCRATCH_ENTRIES, SCRATCH_INODES, createMemberDirs, removeMemberDirs, stagingBase, sweepStaleMembers, writeStagedFile } from "./stage";

const echo: CallTool = async (_server, _tool, args) => ({ args });
const dir = mkdtempSync(join(tmpdir(), "airlock-scratch-test-"));
writeFileSync(join(dir, "data.csv"), "id\n1\n");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const memberPrefix = (pid: number) => join(stagingBase(), `airlock-sbx-${pid}-`);

/** This process's member directories, and the mounts at or below them. */
function leftovers(pid = process.pid): { dirs: string[]; mounts: string[] } {
  const prefix = memberPrefix(pid);
  return {
    dirs: readdirSync(stagingBase())
      .map((name) => join(stagingBase(), name))
      .filter((path) => path.startsWith(prefix)),
    mounts: readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((point) => point.startsWith(prefix)),
  };
}

afterEach(async () => {
  const env = await runInSandbox({ code: `return await tools.demo.echo({ ok: 1 });`, allowedTools: ["demo.echo"], callTool: echo });
  expect(env.result).toEqual({ args: { ok: 1 } });
  await membersTornDown();
  expect(leftovers()).toEqual({ dirs: [], mounts: [] });
});

describe("the scratch (as root: a tmpfs the host mounts)", () => {
  it.each([
    ["empty files", `fs.writeFileSync("out/f" + n, "")`],
    ["empty directories", `fs.mkdirSync("out/d" + n)`],
    ["hard links", `fs.linkSync("out/first", "out/h" + n)`],
  ])("%s run out of inodes at the cap (ENOSPC) and the run is an OUTPUT_LIMIT, even when the script carries on", async (_name, create) => {
    const env = await runInSandbox({
      code: `const fs = process.getBuiltinModule("fs");
        fs.writeFileSync("out/first", "");
        let n = 0; let error = null;
        try { for (; n < 20000; n++) ${create}; } catch (e) { error = e.code; }
        console.log(JSON.stringify({ created: n, error }));
        return "carried on";`,
      allowedTools: [],
      callTool: echo,
      limits: { timeoutMs: 20_000 },
    });
    // out/first and the loop's entries: 4,096 fit, the 4,097th is ENOSPC (a hard link takes an inode too).
    expect(JSON.parse(env.logs[0]!.text)).toEqual({ created: SCRATCH_ENTRIES - 1, error: "ENOSPC" });
    expect(SCRATCH_ENTRIES).toBe(4096);
    expect(env.status).toBe("failed");
    expect(env.error).toEqual({ code: "OUTPUT_LIMIT", message: `the script filled its scratch space (all ${SCRATCH_ENTRIES} entries)`, untrusted: false });
  });

  it.each<IsolationLevel>(["strict", "permission-only"])(
    "%s: while a run executes, staged files are the sandbox identity's only and its scratch is capped",
    async (isolation) => {
      let seen: Record<string, unknown> = {};
      const look: CallTool = async () => {
        const { dirs, mounts } = leftovers();
        expect(dirs).toHaveLength(1);
        const root = dirs[0]!;
        const mode = (path: string) => {
          const s = statSync(path);
          return `${(s.mode & 0o7777).toString(8)} ${s.uid}:${s.gid}`;
        };
        seen = {
          root: mode(root),
          code: mode(join(root, "code")),
          script: mode(join(root, "code", "script.mjs")),
          inputs: mode(join(root, "inputs")),
          input: mode(join(root, "inputs", "data.csv")),
          work: mode(join(root, "work")),
          mounts,
          options: readFileSync("/proc/self/mountinfo", "utf8")
            .split("\n")
            .find((line) => line.split(" ")[4] === join(root, "work"))
            ?.split(" "),
        };
        return "looked";
      };
      const env = await runInSandbox({
        code: `const r = await tools.demo.look({}); return [r, inputs.csv("data.csv")];`,
        inputs: [{ name: "data.csv", path: join(dir, "data.csv") }],
        allowedTools: ["demo.look"],
        callTool: look,
        isolation,
      });
      expect(env.result).toEqual(["looked", [{ id: "1" }]]);
      const { mounts, options, ...modes } = seen;
      expect(modes).toEqual({
        root: "500 65534:65534",
        code: "500 65534:65534",
        script: "400 65534:65534",
        inputs: "500 65534:65534",
        input: "400 65534:65534",
        work: "700 65534:65534",
      });
      expect(mounts).toHaveLength(1);
      // mountinfo: the mount's own options (field 6), then after " - ": type, source, superblock options.
      const fields = options as string[];
      expect(fields[5]).toMatch(/^rw,nosuid,nodev,noexec/);
      expect(fields.slice(fields.indexOf("-") + 1)).toEqual([
        "tmpfs",
        "airlock-scratch",
        `rw,size=${8 * 1024 + 1024}k,nr_inodes=${SCRATCH_INODES},mode=700,uid=65534,gid=65534`,
      ]);
    },
  );

  it("without root, staged directories are 0700 and files 0600, the service user's (and nothing is mounted)", async () => {
    const dirs = await createMemberDirs({ canDropPrivileges: false, mountPath: null, umountPath: null }, 1024 * 1024);
    writeStagedFile(dirs, join(dirs.code, "script.mjs"), "export default 1;");
    const mode = (path: string) => (statSync(path).mode & 0o7777).toString(8);
    expect([dirs.root, dirs.code, dirs.inputs, dirs.work].map(mode)).toEqual(["700", "700", "700", "700"]);
    expect(mode(join(dirs.code, "script.mjs"))).toBe("600");
    expect(statSync(dirs.code).uid).toBe(process.getuid!());
    expect(leftovers().mounts).toEqual([]);
    await removeMemberDirs(dirs);
    expect(existsSync(dirs.root)).toBe(false);
  });
});

describe("no mount and no directory outlives a run (checked after each test)", () => {
  const cancelled = () => {
    const controller = new AbortController();
    // Part of the scenario: the cancel arrives while the script waits.
    setTimeout(() => controller.abort(), 300);
    return controller.signal;
  };
  it.each<[string, () => Partial<Parameters<typeof runInSandbox>[0]>, string]>([
    ["a staging failure", () => ({ code: `return 1;`, inputs: [{ name: "link", path: join(dir, "link.csv") }] }), "SANDBOX_UNAVAILABLE"],
    ["a start-up failure", () => ({ code: `return 1;`, packages: ["not-an-installed-package"] }), "SANDBOX_UNAVAILABLE"],
    ["the wall-clock kill", () => ({ code: `for (;;) {}`, limits: { timeoutMs: 500 } }), "TIMEOUT"],
    [
      "a script that kills itself",
      () => ({ code: `process.kill(process.pid, "SIGKILL"); await new Promise(() => setInterval(() => {}, 1000));` }),
      "SCRIPT_ERROR",
    ],
    [
      "a full scratch",
      () => ({ code: `const fs = process.getBuiltinModule("fs"); for (let i = 0; ; i++) fs.writeFileSync("f" + i, Buffer.alloc(1 << 20));` }),
      "OUTPUT_LIMIT",
    ],
    ["a cancellation", () => ({ code: `await new Promise(() => setInterval(() => {}, 1000));`, signal: cancelled() }), "CANCELLED"],
  ])("after %s", async (_name, request, code) => {
    symlinkSync(join(dir, "data.csv"), join(dir, "link.csv"));
    try {
      const env = await runInSandbox({ code: "", allowedTools: [], callTool: echo, ...request() });
      expect(env.error?.code).toBe(code);
    } finally {
      rmSync(join(dir, "link.csv"));
    }
  });

  it("after a warm pool is closed with members waiting", async () => {
    const pool = createSandboxPool({ size: 2 });
    expect((await pool.run({ code: `return 1;`, allowedTools: [], callTool: echo })).result).toBe(1);
    await expect.poll(() => pool.idle).toBe(2);
    await pool.close();
  });

  it("what a host process that died left behind is removed by the next one; a live process's is kept", async () => {
    const { umountPath } = await detectHost();
    const dead = spawnSync("true").pid!;
    const stale = `${memberPrefix(dead)}Abc123`;
    mkdirSync(join(stale, "work"), { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "airlock-scratch", join(stale, "work")]);
    const live = `${memberPrefix(process.ppid)}Def456`;
    mkdirSync(join(live, "work"), { recursive: true });
    // One left in the OS temp directory by a process of a version that staged there.
    const older = join(tmpdir(), `airlock-sbx-${dead}-Ghi789`);
    mkdirSync(join(older, "code"), { recursive: true });
    try {
      expect(leftovers(dead).mounts).toEqual([join(stale, "work")]);
      await sweepStaleMembers(umountPath);
      expect(leftovers(dead)).toEqual({ dirs: [], mounts: [] });
      expect(existsSync(older)).toBe(false);
      expect(existsSync(live)).toBe(true);
    } finally {
      rmSync(live, { recursive: true, force: true });
    }
  });
});
