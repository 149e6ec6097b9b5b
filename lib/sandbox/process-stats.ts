/**
 * CPU time and peak memory of a sandbox's process tree, read from /proc on the host for the
 * envelope's stats.
 *
 * Guarantees: never throws (a process that is gone, or a /proc entry that cannot be read, ends the
 * walk below it); the walk stops 8 levels below the root. Refuses nothing: it only reports, and
 * the figures are a best effort (a process that exited before the read is not counted).
 */
import { readFileSync } from "node:fs";

export type ProcessUsage = { cpuMs: number; peakRssMb: number };

const CLK_TCK = 100;

/** Sum of CPU time and the largest peak RSS over a process and its descendants, from /proc. */
export function procTreeStats(rootPid: number): ProcessUsage {
  let cpuTicks = 0;
  let peakKb = 0;
  const visit = (pid: number, depth: number) => {
    if (depth > 8) return;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      cpuTicks += Number(fields[11]) + Number(fields[12]);
      const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      // Only main threads fork here (prlimit→bwrap→bwrap init→node; node may not spawn).
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
      for (const child of children ? children.split(" ") : []) visit(Number(child), depth + 1);
    } catch {
      // the process is gone
    }
  };
  visit(rootPid, 0);
  return { cpuMs: Math.round((cpuTicks * 1000) / CLK_TCK), peakRssMb: Math.round(peakKb / 1024) };
}
