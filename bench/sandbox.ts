/**
 * Sandbox benchmark. Prints one JSON object:
 *  - coldStart: `runInSandbox` (strict, `return 1`) vs a bare `node hello.js` on the same Node
 *    binary, interleaved in the same run; p50s and their ratio (target <= 1.15);
 *  - warmStart: `pool.run` of `return 1` with a ready member, p50/p95 (target p50 <= 10 ms);
 *  - toolCall: round trip of 10,000 sequential calls to a no-op tool, timed inside the script,
 *    p50/p95 (target p50 <= 0.2 ms);
 *  - throughput: completed runs per second with 2 concurrent clients on a size-2 pool vs bare
 *    `node hello.js` spawns per second with concurrency 2 (target >= 70%);
 *  - eventLoop: how long this process's event loop is held while sandboxes start. Baseline: the
 *    longest synchronous `spawn()` of bare node from this process (fork copies its page tables);
 *    Airlock: the longest event-loop delay (monitorEventLoopDelay) while a pool runs 10 jobs and
 *    refills, its members started by the spawn helper (lib/sandbox/spawner.ts). Both as the process
 *    is and with 512 MiB more resident, the size of a host process with Next and Prisma loaded.
 * Run: `tsx bench/sandbox.ts` (with Node 26 first in PATH).
 */
import { spawn } from "node:child_process";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxPool, runInSandbox, type CallTool } from "@/lib/sandbox";
import { EMPTY_ENV, detectHost } from "@/lib/sandbox/host";

const noop: CallTool = async () => null;
const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 1000) / 1000;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number) => Math.round(x * 100) / 100;

async function bare(node: string, script: string): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(node, [script], { env: EMPTY_ENV, stdio: ["ignore", "pipe", "inherit"] });
    child.stdout.resume();
    child.on("error", reject);
    child.on("close", () => resolve());
  });
  return performance.now() - t0;
}

async function main() {
  const host = await detectHost();
  const benchDir = mkdtempSync(join(tmpdir(), "airlock-bench-"));
  const hello = join(benchDir, "hello.js");
  writeFileSync(hello, 'console.log("hello");\n');
  // Warm both paths once (page cache, host detection).
  await bare(host.nodePath, hello);
  await runInSandbox({ code: "return 1;", allowedTools: [], callTool: noop });

  const coldRuns = 20;
  const cold: number[] = [];
  const bareTimes: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    bareTimes.push(await bare(host.nodePath, hello));
    const t0 = performance.now();
    const env = await runInSandbox({ code: "return 1;", allowedTools: [], callTool: noop });
    cold.push(performance.now() - t0);
    if (env.status !== "succeeded") throw new Error(`cold run failed: ${JSON.stringify(env.error)}`);
    await sleep(50);
  }

  const pool = createSandboxPool({ size: 2 });
  const warm: number[] = [];
  await sleep(1500);
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    const env = await pool.run({ code: "return 1;", allowedTools: [], callTool: noop });
    warm.push(performance.now() - t0);
    if (env.status !== "succeeded") throw new Error(`warm run failed: ${JSON.stringify(env.error)}`);
    await sleep(400);
  }

  const calls = await pool.run({
    code: `const d = new Float64Array(10000);
      for (let i = 0; i < 10000; i++) { const t = performance.now(); await tools.bench.noop({}); d[i] = performance.now() - t; }
      d.sort();
      return { p50: d[5000], p95: d[9500], total: d.reduce((a, b) => a + b, 0) };`,
    allowedTools: ["bench.noop"],
    callTool: noop,
    limits: { maxToolCalls: 20_000, timeoutMs: 120_000 },
  });
  if (calls.status !== "succeeded") throw new Error(`tool-call run failed: ${JSON.stringify(calls.error)}`);
  const callStats = calls.result as { p50: number; p95: number; total: number };

  await sleep(1000);
  const window = 8_000;
  const throughput = async (job: () => Promise<unknown>) => {
    let done = 0;
    const end = performance.now() + window;
    await Promise.all(
      [0, 1].map(async () => {
        while (performance.now() < end) {
          await job();
          done++;
        }
      }),
    );
    return done / (window / 1000);
  };
  const sandboxRate = await throughput(async () => {
    const env = await pool.run({ code: "return 1;", allowedTools: [], callTool: noop });
    if (env.status !== "succeeded") throw new Error(`throughput run failed: ${JSON.stringify(env.error)}`);
  });
  await pool.close();
  await sleep(1000);
  const bareRate = await throughput(() => bare(host.nodePath, hello));

  /** The loop's longest hold: a bare spawn's synchronous part, and the pool's runs and refills. */
  const eventLoop = async () => {
    let spawnMaxMs = 0;
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const child = spawn(host.nodePath, [hello], { env: EMPTY_ENV, stdio: ["ignore", "ignore", "ignore"] });
      spawnMaxMs = Math.max(spawnMaxMs, performance.now() - t0);
      await new Promise((resolve) => child.on("close", resolve));
    }
    const loopPool = createSandboxPool({ size: 2 });
    await sleep(1500);
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    for (let i = 0; i < 10; i++) {
      const env = await loopPool.run({ code: "return 1;", allowedTools: [], callTool: noop });
      if (env.status !== "succeeded") throw new Error(`event-loop run failed: ${JSON.stringify(env.error)}`);
      await sleep(400);
    }
    delay.disable();
    await loopPool.close();
    return {
      rssMb: Math.round(process.memoryUsage().rss / 2 ** 20),
      bareSpawnHoldMaxMs: round(spawnMaxMs),
      poolLoopDelayMaxMs: round(delay.max / 1e6),
      poolLoopDelayP99Ms: round(delay.percentile(99) / 1e6),
    };
  };
  const loopAsIs = await eventLoop();
  const ballast = Buffer.alloc(512 * 2 ** 20, 1);
  const loopLarge = await eventLoop();
  ballast.fill(0);

  rmSync(benchDir, { recursive: true, force: true });
  const coldP50 = pct(cold, 50);
  const bareP50 = pct(bareTimes, 50);
  console.log(
    JSON.stringify(
      {
        machine: { cpus: cpus().length, node: host.nodeVersion, isolation: "strict", cgroup: host.cgroup },
        coldStart: {
          runs: coldRuns,
          sandboxP50Ms: coldP50,
          sandboxP95Ms: pct(cold, 95),
          bareNodeP50Ms: bareP50,
          ratio: round(coldP50 / bareP50),
          target: "<= 1.15",
        },
        warmStart: { runs: warm.length, p50Ms: pct(warm, 50), p95Ms: pct(warm, 95), target: "p50 <= 10" },
        toolCall: {
          calls: 10_000,
          p50Ms: Math.round(callStats.p50 * 1000) / 1000,
          p95Ms: Math.round(callStats.p95 * 1000) / 1000,
          totalMs: Math.round(callStats.total),
          target: "p50 <= 0.2",
        },
        throughput: {
          windowMs: window,
          concurrency: 2,
          sandboxRunsPerSec: round(sandboxRate),
          bareSpawnsPerSec: round(bareRate),
          ratio: round(sandboxRate / bareRate),
          target: ">= 0.7",
        },
        eventLoop: { asIs: loopAsIs, plus512MiB: loopLarge },
      },
      null,
      2,
    ),
  );
}

await main();
