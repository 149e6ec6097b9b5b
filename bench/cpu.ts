/**
 * Where a benchmark window's CPU went, read from /proc (Linux only): the machine's busy time
 * (/proc/stat, all cores), the process trees of named roots (each live member's own time plus what
 * the children it reaped used, so processes that came and went inside the tree count), this
 * process (process.cpuUsage), and the rest — other work on the machine. Used by bench/scale.ts and
 * bench/load.ts to say whether a target was missed for want of CPU, and by whom.
 *
 * Refuses nothing: a process that vanishes between listing and reading is skipped. Figures are in
 * clock ticks (10 ms, USER_HZ 100), so a short window is coarse.
 */
import { readdir, readFile } from "node:fs/promises";

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU of the process trees under `roots` (live members, and the children they reaped), in ms. */
function treeCpuMs(stats: Map<number, { ppid: number; ticks: number }>, roots: number[]): number {
  const inTree = (pid: number): boolean => {
    for (let at: number | undefined = pid, hops = 0; at && hops < 64; hops++) {
      if (roots.includes(at)) return true;
      at = stats.get(at)?.ppid;
    }
    return false;
  };
  let ticks = 0;
  for (const [pid, stat] of stats) if (inTree(pid)) ticks += stat.ticks;
  return ticks * TICK_MS;
}

async function processStats(): Promise<Map<number, { ppid: number; ticks: number }>> {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const text = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    if (!text) continue;
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) });
  }
  return stats;
}

/** The machine's busy CPU time so far, in ms of CPU (all cores; idle and iowait excluded). */
async function machineBusyMs(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!;
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  return (values.reduce((a, b) => a + b, 0) - values[3]! - values[4]!) * TICK_MS;
}

export type CpuSnapshot = { machine: number; self: number; trees: Record<string, number> };

/** CPU used so far by the machine, this process and each named group of process trees, in ms. */
export async function cpuSnapshot(trees: Record<string, number[]>): Promise<CpuSnapshot> {
  const usage = process.cpuUsage();
  const stats = await processStats();
  const out: Record<string, number> = {};
  for (const [name, roots] of Object.entries(trees)) out[name] = treeCpuMs(stats, roots);
  return { machine: await machineBusyMs(), self: (usage.user + usage.system) / 1000, trees: out };
}

/** CPU used between two snapshots, per group and for this process (named `selfName`), in ms. */
export function cpuUsedMs(from: CpuSnapshot, to: CpuSnapshot, selfName: string): Record<string, number> {
  const used: Record<string, number> = {};
  for (const name of Object.keys(to.trees)) used[name] = to.trees[name]! - (from.trees[name] ?? 0);
  used[selfName] = to.self - from.self;
  return used;
}

/** Cores used over a window of `seconds`: the machine, each group, this process, and other work (the rest of the machine). */
export function coresUsed(from: CpuSnapshot, to: CpuSnapshot, seconds: number, selfName: string): Record<string, number> {
  const cores = (ms: number) => Number((ms / (seconds * 1000)).toFixed(2));
  const used = cpuUsedMs(from, to, selfName);
  const machine = to.machine - from.machine;
  const ours = Object.values(used).reduce((a, b) => a + b, 0);
  return {
    machine: cores(machine),
    ...Object.fromEntries(Object.entries(used).map(([name, ms]) => [name, cores(ms)])),
    otherWork: cores(Math.max(0, machine - ours)),
  };
}
