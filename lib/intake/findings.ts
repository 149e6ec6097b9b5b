/**
 * Analysis findings: what analysis reports about a script, at a line and column. The codes, their
 * severities and meanings live in the registry in lib/errors.ts (FINDING_RULES).
 */
import { FINDING_RULES, type FindingCode, type Severity } from "@/lib/errors";

export { FINDING_RULES, type FindingCode, type Severity };

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
