/**
 * The limits a run is decided, reviewed and executed with: one value, computed at intake, stored
 * in `Run.limits`, shown on the run page and passed as it is to the sandbox.
 *
 * - wall clock, CPU, heap and total tool calls: RUN_LIMIT_DEFAULTS (lib/sandbox/types.ts), which
 *   the policy request also carries;
 * - per-tool caps (`writeCaps`) for every tool in the capability set that is not read-only (an
 *   unknown tool counts as not read-only): the number of call sites analysis found for it; a call
 *   site inside a loop, a callback or a function (recursion) makes it `maxToolCalls`; the
 *   `@maxWritesPerTool("N")` annotation of the permit that decided raises it to N. Read-only tools
 *   have no cap of their own, only `maxToolCalls`.
 */
import { runColumn } from "@/lib/contracts/run-columns";
import type { ToolCallSites } from "@/lib/contracts/analysis";
import { RUN_LIMIT_DEFAULTS, type RunLimits } from "@/lib/sandbox/types";

export type DecidedRunLimits = RunLimits & {
  /** "server.tool" → the most calls the run may make of that tool (tools that are not read-only). */
  writeCaps: Record<string, number>;
};

export function decideRunLimits(callSites: ToolCallSites, maxWritesPerTool: number | undefined, base: RunLimits = RUN_LIMIT_DEFAULTS): DecidedRunLimits {
  const writeCaps: Record<string, number> = {};
  for (const [capability, sites] of Object.entries(callSites)) {
    if (sites.readOnly) continue;
    const bySites = sites.repeated ? base.maxToolCalls : sites.count;
    writeCaps[capability] = Math.min(base.maxToolCalls, Math.max(bySites, maxWritesPerTool ?? 0));
  }
  return { ...base, writeCaps };
}

/** Reads `Run.limits`; null for runs stored before limits were decided. A malformed value is a StoredRunInvalid. */
export function parseRunLimits(run: { id: string; limits: unknown }): DecidedRunLimits | null {
  return runColumn(run, "limits");
}
