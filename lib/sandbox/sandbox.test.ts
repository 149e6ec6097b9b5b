/**
 * The script contract and the launcher: real sandboxes (Node 26 + permission model, bubblewrap
 * under `strict`), no mocks. Attacks live in attacks.test.ts.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxPool, runInSandbox, type CallTool, type ToolCallRecord } from "./index";
import { BOOTSTRAP_PATH, EMPTY_ENV, detectHost, versionAtLeast } from "./host";
import { prepareScript } from "./script";
import { spawnHelperPid } from "./spawner";

const echo: CallTool = async (server, tool, args) => ({ server, tool, args });
const dir = mkdtempSync(join(tmpdir(), "airlock-test-sandbox-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, "rows.csv"), 'id,amount,note\n1,10.50,"a, b"\n2,3.25,"say ""hi"""\n');
writeFileSync(join(dir, "cfg.json"), JSON.stringify({ rate: 2 }));
writeFileSync(join(dir, "notes.txt"), "hello");

describe("script contract (strict)", () => {
  it("reads 200,000-row CSV inputs in full, with quoted fields or without (a byte-order mark, CRLF or LF lines, an empty line)", async () => {
    const quoted = Array.from({ length: 200_000 }, (_, i) => `${i},"x, ""${i}""",${i % 7}`);
    const plain = Array.from({ length: 200_000 }, (_, i) => `${i},x${i},${i % 7}`);
    writeFileSync(join(dir, "quoted.csv"), `\ufeffid,label,n\r\n${quoted.join("\r\n")}\r\n`);
    writeFileSync(join(dir, "plain.csv"), `\ufeffid,label,n\n${plain.slice(0, 1000).join("\n")}\n\n${plain.slice(1000).join("\n")}\n`);
    const env = await runInSandbox({
      code: `const read = (name) => { const rows = inputs.csv(name); return { count: rows.length, first: rows[0], last: rows[rows.length - 1], sum: rows.reduce((s, r) => s + Number(r.n), 0) }; };
return { quoted: read("quoted.csv"), plain: read("plain.csv") };`,
      inputs: [
        { name: "quoted.csv", path: join(dir, "quoted.csv") },
        { name: "plain.csv", path: join(dir, "plain.csv") },
      ],
      allowedTools: [],
      callTool: echo,
    });
    expect(env.error).toBeNull();
    const sum = quoted.reduce((s, _, i) => s + (i % 7), 0);
    const last = String(199_999 % 7);
    expect(env.result).toEqual({
      quoted: { count: 200_000, first: { id: "0", label: 'x, "0"', n: "0" }, last: { id: "199999", label: 'x, "199999"', n: last }, sum },
      plain: { count: 200_000, first: { id: "0", label: "x0", n: "0" }, last: { id: "199999", label: "x199999", n: last }, sum },
    });
  });

  it("makes a CSV column named __proto__ or constructor an own field of each row, switching no prototype", async () => {
    writeFileSync(join(dir, "special.csv"), "__proto__,constructor,id\nx,y,1\n");
    writeFileSync(join(dir, "normal.csv"), "constructor,id\ny,2\n");
    const env = await runInSandbox({
      code: `const look = (row) => ({ keys: Object.keys(row), values: Object.values(row), plain: Object.getPrototypeOf(row) === Object.prototype });
return { special: inputs.csv("special.csv").map(look), normal: inputs.csv("normal.csv").map(look), polluted: ({}).x ?? null };`,
      inputs: [
        { name: "special.csv", path: join(dir, "special.csv") },
        { name: "normal.csv", path: join(dir, "normal.csv") },
      ],
      allowedTools: [],
      callTool: echo,
    });
    expect(env.error).toBeNull();
    expect(env.result).toEqual({
      special: [{ keys: ["__proto__", "constructor", "id"], values: ["x", "y", "1"], plain: true }],
      normal: [{ keys: ["constructor", "id"], values: ["y", "2"], plain: true }],
      polluted: null,
    });
  });

  it("runs tools, inputs, allowlisted imports, artifacts, logs and returns the result", async () => {
    const calls: ToolCallRecord[] = [];
    const env = await runInSandbox({
      code: `import { parse } from "csv-parse/sync";
const Decimal = (await import("decimal.js")).default;
const fs = await import("node:fs");
console.log("rows", inputs.csv("rows.csv").length);
const echoed = await tools.demo.echo({ n: 1 });
fs.mkdirSync("out/sub", { recursive: true });
fs.writeFileSync("out/sub/report.txt", "total");
const rows = inputs.csv("rows.csv");
return {
  echoed,
  rows,
  total: rows.reduce((s, r) => s.plus(r.amount), new Decimal(0)).toString(),
  parsed: parse("a,b\\n1,2", { columns: true }),
  cfg: inputs.json("cfg.json"),
  text: inputs.text("notes.txt"),
  names: inputs.list().map((i) => i.name),
};`,
      inputs: [
        { name: "rows.csv", path: join(dir, "rows.csv") },
        { name: "cfg.json", path: join(dir, "cfg.json") },
        { name: "notes.txt", path: join(dir, "notes.txt") },
      ],
      allowedTools: ["demo.echo"],
      callTool: echo,
      onToolCall: (r) => calls.push(r),
    });
    expect(env.error).toBeNull();
    expect(env.status).toBe("succeeded");
    expect(env.result).toEqual({
      echoed: { server: "demo", tool: "echo", args: { n: 1 } },
      rows: [
        { id: "1", amount: "10.50", note: "a, b" },
        { id: "2", amount: "3.25", note: 'say "hi"' },
      ],
      total: "13.75",
      parsed: [{ a: "1", b: "2" }],
      cfg: { rate: 2 },
      text: "hello",
      names: ["rows.csv", "cfg.json", "notes.txt"],
    });
    expect(env.logs).toEqual([{ level: "log", text: "rows 2" }]);
    expect(env.artifacts.map((a) => [a.name, Buffer.from(a.base64, "base64").toString()])).toEqual([["sub/report.txt", "total"]]);
    expect(env.stats.toolCalls).toBe(1);
    expect(env.stats.peakRssMb).toBeGreaterThan(10);
    expect(calls).toMatchObject([{ server: "demo", tool: "echo", outcome: "ok" }]);
    expect(env.isolation).toMatchObject({ level: "strict", layers: { permissionModel: true, bubblewrap: true, prlimit: true } });
    expect(env.flags).toEqual([]);
  });

  it("an input the run was not given is an error that says how to give it", async () => {
    const env = await runInSandbox({ code: `return inputs.text("fx-rates.csv");`, language: "javascript", allowedTools: [], callTool: echo });
    expect(env.error).toMatchObject({
      code: "SCRIPT_ERROR",
      message: expect.stringContaining("no input named fx-rates.csv was passed to this run: name it in submit_run's inputs (list_inputs lists them)"),
    });
  });

  it("has the Node globals the script contract declares beside the tools (lib/contracts/script-contract.ts)", async () => {
    const env = await runInSandbox({
      code: `return [typeof performance.now(), crypto.randomUUID().length, crypto.getRandomValues(new Uint8Array(4)).length, atob(btoa("hi")), typeof queueMicrotask, structuredClone({ a: 1 }).a, new URL("https://x.test/a").pathname, new TextDecoder().decode(new TextEncoder().encode("é"))];`,
      allowedTools: [],
      callTool: echo,
    });
    expect(env.result).toEqual(["number", 36, 4, "hi", "function", 1, "/a", "é"]);
  });

  it("strips TypeScript types and keeps line numbers for errors", async () => {
    const ok = await runInSandbox({
      code: `interface Row { a: number }\nconst rows: Row[] = [{ a: 2 }];\nreturn rows.map((r): number => r.a * 2);`,
      language: "typescript",
      allowedTools: [],
      callTool: echo,
    });
    expect(ok.result).toEqual([4]);
    const bad = await runInSandbox({ code: `const x = 1;\n\nthrow new Error("line three");`, allowedTools: [], callTool: echo });
    expect(bad.error).toMatchObject({ code: "SCRIPT_ERROR", message: "Error: line three", untrusted: true });
    expect(prepareScript(`import a from "csv-parse";\n// c\nreturn 1;`, "javascript", ["csv-parse"]).module.split("\n")[2]).toBe("return 1;");
  });

  it("refuses static imports outside the allowlist before a sandbox starts", async () => {
    const env = await runInSandbox({ code: `import cp from "node:child_process";\nreturn 1;`, allowedTools: [], callTool: echo });
    expect(env.error).toMatchObject({ code: "CAPABILITY_DENIED" });
    expect(env.error!.message).toContain("node:child_process");
    const pkg = await runInSandbox({ code: `import z from "zod";\nreturn 1;`, allowedTools: [], callTool: echo });
    expect(pkg.error?.code).toBe("CAPABILITY_DENIED");
    const dyn = await runInSandbox({ code: `await import("zod"); return 1;`, allowedTools: [], callTool: echo });
    expect(dyn.error).toMatchObject({ code: "CAPABILITY_DENIED" });
  });

  it("flags a script that swallows its errors and returns nothing; uncaught tool errors are TOOL_ERROR", async () => {
    const failing: CallTool = async () => {
      throw new Error("upstream said no");
    };
    const swallowed = await runInSandbox({
      code: `try { await tools.demo.fail({}); } catch (e) { console.error("ignored", e.message); }`,
      allowedTools: ["demo.fail"],
      callTool: failing,
    });
    expect(swallowed.status).toBe("succeeded");
    expect(swallowed.flags).toEqual(expect.arrayContaining(["no_result", "swallowed_errors", "tool_errors"]));
    expect(swallowed.logs[0]).toEqual({ level: "error", text: "ignored upstream said no" });
    const uncaught = await runInSandbox({ code: `return await tools.demo.fail({});`, allowedTools: ["demo.fail"], callTool: failing });
    expect(uncaught.error).toMatchObject({ code: "TOOL_ERROR", untrusted: true });
    expect(uncaught.error!.message).toContain("upstream said no");
  });

  it("caps concurrent tool calls on the host side", async () => {
    let inFlight = 0;
    let peak = 0;
    const slow: CallTool = async () => {
      peak = Math.max(peak, ++inFlight);
      // Part of the scenario: a slow upstream, so that calls overlap and the cap is what limits them.
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return 1;
    };
    const env = await runInSandbox({
      code: `const r = await Promise.all(Array.from({ length: 30 }, () => tools.demo.slow({}))); return r.length;`,
      allowedTools: ["demo.slow"],
      callTool: slow,
      limits: { maxConcurrentToolCalls: 3 },
    });
    expect(env.result).toBe(30);
    expect(peak).toBe(3);
  });

  it("cancellation kills the run and reports CANCELLED", async () => {
    const controller = new AbortController();
    // Part of the scenario: the cancel arrives while the script is busy looping.
    setTimeout(() => controller.abort(), 300);
    const env = await runInSandbox({ code: `for (;;) {}`, allowedTools: [], callTool: echo, signal: controller.signal });
    expect(env).toMatchObject({ status: "cancelled", error: { code: "CANCELLED", untrusted: false } });
  });

  it("runs under permission-only when asked, and records the level", async () => {
    const env = await runInSandbox({ code: `return process.getuid();`, isolation: "permission-only", allowedTools: [], callTool: echo });
    expect(env.status).toBe("succeeded");
    expect(env.isolation).toMatchObject({ level: "permission-only", layers: { bubblewrap: false, permissionModel: true } });
  });

  it("fails with SANDBOX_UNAVAILABLE on a Node older than 26 instead of running weaker", async () => {
    expect(versionAtLeast("v20.19.0", [26, 10, 0])).toBe(false);
    expect(versionAtLeast("v26.10.0", [26, 10, 0])).toBe(true);
    const env = await runInSandbox({ code: `return 1;`, allowedTools: [], callTool: echo, nodePath: "/usr/bin/node" });
    expect(env.error?.code).toBe("SANDBOX_UNAVAILABLE");
    expect(env.status).toBe("failed");
  });

  it("refuses symlinked inputs at staging", async () => {
    symlinkSync(join(dir, "notes.txt"), join(dir, "link.txt"));
    const env = await runInSandbox({ code: `return 1;`, inputs: [{ name: "x", path: join(dir, "link.txt") }], allowedTools: [], callTool: echo });
    expect(env.error?.code).toBe("SANDBOX_UNAVAILABLE");
    expect(env.error!.message).toContain("symlinks are refused");
    const name = await runInSandbox({ code: `return 1;`, inputs: [{ name: "../x", path: join(dir, "notes.txt") }], allowedTools: [], callTool: echo });
    expect(name.error!.message).toContain("plain file name");
    const big = await runInSandbox({
      code: `return 1;`,
      inputs: [{ name: "rows.csv", path: join(dir, "rows.csv") }],
      allowedTools: [],
      callTool: echo,
      limits: { maxInputBytes: 10 },
    });
    expect(big.error!.message).toContain("inputs exceed 10 bytes");
  });

  it.each([
    [[], "NO_PERMISSION_MODEL"],
    [["--permission", "--allow-fs-read=*"], "PERMISSION_TOO_WIDE"],
    [["--permission", "--allow-fs-read=/", "--allow-net"], "PERMISSION_TOO_WIDE"],
  ])("the child refuses to run with flags %j (%s)", async (flags, expected) => {
    expect(await startBootstrap(flags)).toMatchObject({ code: 71, frame: { t: "done", ok: false, error: { code: expected } } });
  });

  it("the child refuses every --allow-* flag of the pinned Node, each by its own check", async () => {
    // process.execPath is the pinned Node under vitest; its --help lists the permission flags.
    const help = execFileSync(process.execPath, ["--help"], { env: EMPTY_ENV, encoding: "utf8" });
    const flags = [...help.matchAll(/^\s+(--allow-[a-z-]+)(=\.\.\.)?\s/gm)].map(([, flag, value]) => (value ? `${flag}=/` : flag!));
    expect(flags).toEqual(expect.arrayContaining(["--allow-net", "--allow-ffi", "--allow-fs-read=/", "--allow-openssl-store"]));
    const base = ["--permission", `--allow-fs-read=${dirname(BOOTSTRAP_PATH)}`, "--no-experimental-ffi"];
    for (const flag of flags) {
      const { code, frame } = await startBootstrap([...base, flag]);
      expect({ flag, code, frame }).toMatchObject({
        flag,
        code: 71,
        frame: { t: "done", ok: false, error: { code: "PERMISSION_TOO_WIDE", message: `${flag.split("=")[0]} is in effect` } },
      });
    }
    // The flags the sandbox is started with pass.
    expect(await startBootstrap(base)).toEqual({ code: 0, frame: { t: "ready" } });
  });

  it("the child refuses to run where node:ffi can be loaded", async () => {
    expect(await startBootstrap(["--permission", `--allow-fs-read=${dirname(BOOTSTRAP_PATH)}`])).toMatchObject({
      code: 71,
      frame: { error: { code: "PERMISSION_TOO_WIDE", message: "node:ffi can be loaded" } },
    });
  });
});

/** Runs the bootstrap with `flags` and no job (stdin closed): its exit code and first frame. */
async function startBootstrap(flags: string[]): Promise<{ code: number | null; frame: unknown }> {
  const { nodePath } = await detectHost();
  const child = spawn(nodePath, [...flags, BOOTSTRAP_PATH], { env: EMPTY_ENV, stdio: ["pipe", "pipe", "ignore"] });
  child.stdin.end();
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, frame: JSON.parse(out.split("\n")[0]!) };
}

describe("warm pool", () => {
  const pool = createSandboxPool({ size: 2 });
  afterAll(() => pool.close());

  /** Members are children of the spawn helper (./spawner.ts). */
  function sandboxPids(): number[] {
    const pids: number[] = [];
    const helper = spawnHelperPid()!;
    for (const tid of readdirSync(`/proc/${helper}/task`)) {
      for (const pid of readFileSync(`/proc/${helper}/task/${tid}/children`, "utf8").trim().split(" ").filter(Boolean)) {
        if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("bootstrap.mjs")) pids.push(Number(pid));
      }
    }
    return pids;
  }

  it("uses each member once, replaces a dead member, and keeps serving", async () => {
    const first = await pool.run({ code: `return process.pid;`, allowedTools: [], callTool: echo });
    expect(first.status).toBe("succeeded");
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        pool.run({ code: `globalThis.seen ??= 0; globalThis.seen++; return [globalThis.seen, ${i}];`, allowedTools: [], callTool: echo }),
      ),
    );
    for (const [i, env] of results.entries()) expect(env.result).toEqual([1, i]);
    // Replacements are spawned after the runs, and the used members take a moment to die: wait
    // until exactly the two waiting members are there, so the one killed below is a waiting one.
    await expect.poll(() => sandboxPids().length, { timeout: 10_000 }).toBe(2);
    const before = sandboxPids();
    const killed = before[0]!;
    process.kill(killed, "SIGKILL");
    // The killed member is gone and a new one has been spawned in its place.
    await expect
      .poll(
        () => {
          const now = sandboxPids();
          return { killedGone: !now.includes(killed), replaced: now.some((pid) => !before.includes(pid)) };
        },
        { timeout: 10_000 },
      )
      .toEqual({ killedGone: true, replaced: true });
    expect(pool.idle).toBe(2);
    const after = await pool.run({ code: `return "still serving";`, allowedTools: [], callTool: echo });
    expect(after.result).toBe("still serving");
  });

  it("spawns a replacement once runs have been quiet for a while, not while a run's answer is being made", async () => {
    await expect.poll(() => pool.idle, { timeout: 10_000 }).toBe(2);
    const done = await pool.run({ code: `return 1;`, allowedTools: [], callTool: echo });
    expect(done.status).toBe("succeeded");
    // A turn of the event loop later (where an immediate refill would have forked), still one short.
    await new Promise((resolve) => setImmediate(resolve));
    expect(pool.idle).toBe(1);
    await expect.poll(() => pool.idle, { timeout: 10_000 }).toBe(2);
  });
});
