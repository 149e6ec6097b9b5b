/**
 * What analysis hands to policy, review and the run lifecycle: findings at a line and column
 * (codes, severities and meanings are the registry in lib/errors.ts), the script's facts derived
 * from the server-side tool registry, and its tool call sites (the source of per-tool caps).
 */
import { FINDING_RULES, type FindingCode, type Severity } from "@/lib/errors";
import type { DataClass } from "./data-classes";
import type { CheckKind } from "./script-contract";
import type { Effect } from "./tools";

export type Finding = {
  code: FindingCode;
  severity: Severity;
  message: string;
  /** 1-based, in the code as the agent submitted it. */
  line: number;
  /** 1-based. */
  column: number;
};

export function finding(code: FindingCode, message: string, line: number, column: number): Finding {
  return { code, severity: FINDING_RULES[code].severity, message, line, column };
}

export type ScriptFacts = {
  effect: Effect;
  openWorld: boolean;
  /** Data classes of the referenced tools, sorted, unique. */
  dataClasses: DataClass[];
  toolCount: number;
  /** Data classes of the referenced tools that are read-only, sorted, unique. */
  readOnlyDataClasses: DataClass[];
  /** Kinds of the checks the script declares (walk.ts), sorted, unique. */
  checks: CheckKind[];
};

/**
 * Per tool in the capability set: how many places call it, whether one of them can run more than
 * once (loop, callback, recursion, tool taken as a value), and whether the registry says it is
 * read-only (an unknown tool is not). The run's per-tool caps are derived from this.
 */
export type ToolCallSites = Record<string, { count: number; repeated: boolean; readOnly: boolean }>;
