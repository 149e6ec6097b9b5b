/**
 * The closed vocabulary of analysis findings (DESIGN.md step 2). Every code has exactly one
 * severity, fixed here, so a Cedar policy can match on codes and a reviewer can trust that
 * "critical" means the same thing in every run. Adding a code without classifying it does not
 * compile (`satisfies Record<FindingCode, …>`).
 *
 * Severities: `critical` makes the proposal unrunnable under the default policies; `error` is a
 * type error (the script may still run, reviewers see it); `warning` needs a human's eye;
 * `info` is recorded for the audit trail only. The shipped default policies escalate the
 * warnings that hide what a reviewer reads (invisible_character, confusable_identifier) even for
 * read-only scripts; other warnings only raise the risk shown in the queue.
 */

export type Severity = "info" | "warning" | "error" | "critical";

export const FINDING_RULES = {
  syntax_error: { severity: "critical", summary: "the script does not parse" },
  type_error: { severity: "error", summary: "the script does not type-check against the tool declarations" },
  dynamic_tool_access: {
    severity: "critical",
    summary: "a tool is reached other than as tools.<server>.<tool>, so the capability set cannot be known",
  },
  eval_like: { severity: "critical", summary: "code is generated or loaded at run time" },
  computed_global: {
    severity: "critical",
    summary: "the global object is indexed with a computed key or passed around",
  },
  global_object_access: { severity: "info", summary: "a property of the global object is read by name" },
  process_access: { severity: "critical", summary: "the host process object is referenced" },
  require_access: { severity: "critical", summary: "CommonJS require is referenced" },
  disallowed_import: { severity: "critical", summary: "a package outside the allowlist is imported" },
  module_syntax: {
    severity: "critical",
    summary: "exports, or imports after the first statement, are not valid in a script body",
  },
  unknown_tool: { severity: "critical", summary: "the script calls a tool the registry does not know" },
  quarantined_tool: { severity: "critical", summary: "the script calls a tool that is quarantined" },
  constructor_access: { severity: "warning", summary: "a .constructor property is read" },
  indirect_timer_callback: {
    severity: "warning",
    summary: "a timer is given a callback that is not a function literal",
  },
  unbounded_loop: {
    severity: "warning",
    summary: "an unbounded loop calls a tool that is not read-only",
  },
  invisible_character: {
    severity: "warning",
    summary: "the script contains an invisible or direction-changing character (such as U+2028, which ends a // comment) that can hide code from a reviewer",
  },
  confusable_identifier: {
    severity: "warning",
    summary: "an identifier mixes scripts or uses letters that look like Latin ones (such as Cyrillic о), so it can pass for another name",
  },
  analysis_error: { severity: "critical", summary: "the analyser failed on this script" },
} as const satisfies Record<string, { severity: Severity; summary: string }>;

export type FindingCode = keyof typeof FINDING_RULES;

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
