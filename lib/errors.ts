/**
 * Typed errors. Every failure that crosses a boundary (HTTP, MCP, server action, CLI) is an
 * AppError with a code from APP_ERROR_STATUS; the code decides what the caller sees, and the
 * cause is kept for server-side logs, never shown. Anything that is not an AppError is reported
 * as `internal` without its message (see toPublicError).
 *
 * Run outcomes are a separate, closed vocabulary (RUN_ERROR_CODES): they are what an agent acts on
 * in a run's result envelope, not request failures.
 */

import { nearestName } from "@/lib/edit-distance";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import { redactSecrets } from "@/lib/untrusted/secrets";

/** A caller's own text as a refusal quotes it back: control, bidi and invisible characters dropped, credentials redacted, at most `max` characters. */
export function echoedText(text: string, max = 100): string {
  return redactSecrets(sanitizeText(text, max)).text;
}

export const APP_ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  /** It existed and was deleted on purpose (retention purged the bytes); the message says when. */
  gone: 410,
  payload_too_large: 413,
  rate_limited: 429,
  config_invalid: 500,
  database_unavailable: 503,
  /** A stored value no longer matches its schema (a JSON column); named with its row and column. */
  stored_data_invalid: 500,
  internal: 500,
} as const satisfies Record<string, number>;

export type AppErrorCode = keyof typeof APP_ERROR_STATUS;

export class AppError extends Error {
  readonly code: AppErrorCode;
  /** Structured, safe-to-show detail (e.g. which field was wrong). */
  readonly details?: Record<string, unknown>;
  /** What an agent should do next, where the code's general advice (lib/mcp/errors.ts) would mislead. */
  readonly next?: string;

  constructor(code: AppErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown>; next?: string } = {}) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.details = options.details;
    this.next = options.next;
  }

  get status(): number {
    return APP_ERROR_STATUS[this.code];
  }
}

type SchemaIssue = { path: readonly PropertyKey[]; message: string; code?: string; keys?: readonly string[] };

/**
 * `bad_request` naming the first argument a closed schema refused: `field.path: rule`, with
 * `details.field`. An argument the schema does not take is named first, since a misspelt name also
 * leaves the real one "required": `run_id: not an argument of this tool; did you mean runId?`.
 */
export function invalidArguments(error: { issues: readonly SchemaIssue[] }): AppError {
  const unknown = unknownArgument(error.issues);
  if (unknown) return new AppError("bad_request", unknown.message, { details: { field: unknown.field } });
  const issue = error.issues[0];
  const field = issue?.path.map(String).join(".") || null;
  // zod says "Invalid input: expected string, received undefined" of a missing field.
  const missing = /^Invalid input: expected (\w+), received undefined$/.exec(issue?.message ?? "");
  const problem = missing ? `required (${missing[1]})` : (issue?.message ?? "invalid");
  return new AppError("bad_request", `${field ?? "arguments"}: ${problem}`, { details: { field } });
}

/** The first argument a closed object refused as unknown, and the argument it likely meant among those that failed beside it. */
function unknownArgument(issues: readonly SchemaIssue[]): { field: string; message: string } | null {
  const unknown = issues.find((issue) => issue.code === "unrecognized_keys" && (issue.keys?.length ?? 0) > 0);
  if (!unknown) return null;
  const parent = unknown.path.map((part) => echoedText(String(part)));
  const key = echoedText(String(unknown.keys![0]));
  const field = [...parent, key].join(".");
  // The object's other problems: its required arguments left out, among them the one the misspelling meant.
  const beside = issues.filter(
    (issue) => issue !== unknown && issue.path.length === parent.length + 1 && unknown.path.every((part, i) => issue.path[i] === part),
  );
  const missing = beside.filter((issue) => / received undefined$/.test(issue.message)).map((issue) => String(issue.path.at(-1)));
  const names = beside.map((issue) => String(issue.path.at(-1)));
  // The same name spelt otherwise (run_id), near it (runid), or a part of it (id for runId).
  const near = nearestName(key, names, { parts: true });
  const where = parent.length > 0 ? `an argument of ${parent.join(".")}` : "an argument of this tool";
  if (near) return { field, message: `${field}: not ${where}; did you mean ${[...parent, near].join(".")}?` };
  const required =
    missing.length > 0 ? `; ${missing.map((name) => [...parent, name].join(".")).join(", ")} ${missing.length === 1 ? "is" : "are"} required` : "";
  return { field, message: `${field}: not ${where}${required}` };
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** What a caller may see of any thrown value: typed errors keep their message, others do not. */
export function toPublicError(error: unknown): {
  code: AppErrorCode;
  message: string;
  status: number;
  details?: Record<string, unknown>;
} {
  if (isAppError(error)) {
    return { code: error.code, message: error.message, status: error.status, details: error.details };
  }
  return { code: "internal", message: "Internal error", status: 500 };
}

/**
 * The registry of run error codes: what an agent finds in a run's envelope (`error.code`) and
 * branches on, each with its meaning and what the agent should do next (`error.next` in the run's
 * view; both rendered in docs/codes.md, checked by a test). A new code is added here, with both,
 * or it cannot be written.
 */
export const RUN_ERROR_RULES = {
  POLICY_DENIED: {
    meaning: "Policy denied the run; the reasons name the deciding policies.",
    next: "Fix what the findings and reasons name (they quote the line), then submit a new run; the same script will be denied again.",
  },
  REVIEW_REJECTED: { meaning: "A reviewer rejected the run; the comment says why.", next: "Read the reviewer's comment; do not resubmit the same script." },
  REVIEW_EXPIRED: {
    meaning: "No reviewer decided before the review expired.",
    next: "Submit it again if it is still needed, and tell the user it waits for a reviewer.",
  },
  RESULT_WITHHELD: {
    meaning:
      "The script ran, and its result is withheld from the agent: a release policy forbids handing it over, or a reviewer withheld it (the reasons or the comment say why). Writes it made stand.",
    next: "Do not resubmit the same script: read the reasons or the reviewer's comment, and tell the user the result was withheld.",
  },
  RELEASE_EXPIRED: {
    meaning: "The script ran, and policy held its result for a reviewer, who did not release it before the hold expired; the result stays withheld.",
    next: "Tell the user the result waits for a reviewer who did not come; submit the run again only if it is still needed (writes it made stand).",
  },
  CHANGES_REQUESTED: {
    meaning: "A reviewer asked for changes; submit a new script.",
    next: "Change the script as the comment asks and submit it as a new run.",
  },
  PREVIEW_FAILED: {
    meaning:
      "The plan preview (a dry run with writes intercepted) failed before any reviewer was asked; the message is the preview's error. `PLAN_UNREVIEWABLE` in it: a write's arguments hold what looks like a credential (or what cannot be stored as sent), which is redacted wherever it is shown, or a placeholder (`@plan:…`) that no earlier planned write answered with, which would stand for a value only the real call returns, or the amount of money it moves is not a number (a placeholder for what an earlier write will answer); either way reviewers could not see what it would send. `INVALID_ARGUMENTS` in it: a write's arguments break its tool's input schema, so the broker would refuse it at apply, after the writes before it. `PLAN_UNSTABLE` in it: the script, previewed twice, planned different writes (their arguments depend on the time, on randomness or on data that changed meanwhile), so the run could never make the writes reviewers would approve. When the preview read pii, financial or phi data only the kind of failure is shown, not which write or why.",
    next: "Fix the error the message names and submit a new run; keep credentials out of a write's arguments (the broker holds the upstreams' credentials).",
  },
  PLAN_DIVERGED: {
    meaning:
      "The run was about to make a write that is not the next one of its approved plan; it was stopped before that call. The calls already made are listed.",
    next: "Make the script's writes depend only on what its reads return, then submit a new run; check the calls already made before retrying a write.",
  },
  CAPABILITY_DENIED: {
    meaning: "The script reached for a tool, module or resource outside what was approved.",
    next: "Call only the tools search_tools lists and import only allowed packages; submit a new run.",
  },
  TIMEOUT: {
    meaning: "The run exceeded its wall-clock or CPU-time limit.",
    next: "Make the script do less per run (page through data, fewer calls) and submit a new run.",
  },
  MEMORY_LIMIT: { meaning: "The script ran out of its memory limit.", next: "Process the data in pages instead of holding it all, then submit a new run." },
  OUTPUT_LIMIT: {
    meaning: "The script's result, logs, output or files exceeded their limits.",
    next: "Return a summary instead of raw rows (aggregate in the script), log less, then submit a new run.",
  },
  TOOL_ERROR: {
    meaning: "A tool call failed and the script did not handle it.",
    next: "Read the tool's error in the message, fix the arguments, and submit a new run.",
  },
  SCRIPT_ERROR: {
    meaning: "The script threw, or the sandbox exited before reporting a result.",
    next: "Fix the error at the line the stack (error.detail) names, then submit a new run.",
  },
  SANDBOX_UNAVAILABLE: {
    meaning: "The sandbox could not be started with the required isolation, or its inputs could not be staged.",
    next: "This is not the script's fault: try again later, and tell the user if it persists.",
  },
  BUDGET_EXCEEDED: {
    meaning:
      "A budget or limit was reached: runs per hour, concurrent runs, runs waiting for review, CPU-seconds per day, total tool calls, or the approved calls of one tool.",
    next: "Wait for running or pending runs to finish, or do the work in fewer runs and calls.",
  },
  USE_SUBMIT_RUN: {
    meaning:
      "call_tool makes one call of a tool accepted as read-only that policy allows without review; this call is not one (a tool that may change data, a quarantined tool, or a call policy would send to reviewers). Nothing was called.",
    next: "Write a script that makes the call and submit it with submit_run, where policy and reviewers decide.",
  },
  CANCELLED: {
    meaning: "The run was cancelled by the agent, a reviewer, or the agent's revocation.",
    next: "Do not resubmit unless the user asks for it again.",
  },
  EXECUTOR_LOST: {
    meaning:
      "The process running the script stopped; it was not retried because a call that may have had an effect was made or in flight (or it was already retried once). A human decides whether to resubmit.",
    next: "Check with read-only tools whether its writes happened before submitting it again.",
  },
  RPC_VIOLATION: {
    meaning: "The sandboxed script broke the tool-call protocol.",
    next: "Call tools only through `tools.<server>.<tool>(args)` and submit a new run.",
  },
  STORAGE_REJECTED: {
    meaning:
      "What the run produced could not be stored, or a tool call could not be recorded before it was made; the run was ended instead of being left running.",
    next: "Try again later; if it repeats, return a smaller result.",
  },
  CHECK_FAILED: {
    meaning:
      "A check the script declared (checks.sum, checks.rowCount, …) failed, as the host computed it; the result is withheld unless a reviewer releases it.",
    next: "Do not use the result: find why the check failed (the message has the numbers), fix the script or the check, and submit a new run.",
  },
  SWALLOWED_FAILURE: {
    meaning:
      "The run finished with a result although a tool call failed or the script logged an error, and it did not declare the result partial (checks.allowPartial).",
    next: "Treat the result as incomplete: handle the failure in the script, or declare checks.allowPartial(reason) if a partial result is intended, and resubmit.",
  },
} as const satisfies Record<string, { meaning: string; next: string }>;

export type RunErrorCode = keyof typeof RUN_ERROR_RULES;

export const RUN_ERROR_CODES = Object.keys(RUN_ERROR_RULES) as RunErrorCode[];

/**
 * The closed vocabulary of analysis findings. Every code has exactly one severity, fixed here, so
 * a Cedar policy can match on codes and a reviewer can trust that "critical" means the same thing
 * in every run. Adding a code without classifying it does not compile.
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
  argument_type_error: { severity: "error", summary: "a tool call's arguments do not type-check against the tool's declaration" },
  argument_invalid: {
    severity: "error",
    summary:
      "a tool call's argument, known before the run, breaks the tool's input schema (the message names the argument and the rule), so the broker would refuse the call",
  },
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
  clock_or_random: {
    severity: "warning",
    summary:
      "a script that writes reads the clock or randomness: a write whose arguments depend on it is made only if the approved run computes the same value (the preview refuses plans two runs disagree on; a day or a time bucket can still change before approval)",
  },
  undefined_name: {
    severity: "critical",
    summary: "the script uses a name defined nowhere it can reach (a misspelt variable, fetch: the sandbox has no network), so the run would fail there",
  },
  tool_unavailable: {
    severity: "critical",
    summary: "the script calls a tool on an upstream Airlock cannot reach now, so the tool cannot be checked or called",
  },
  constructor_access: { severity: "warning", summary: "a .constructor property is read" },
  builtin_tampering: {
    severity: "critical",
    summary: "the script changes a prototype, a builtin or an imported module that code outside it also uses (or takes a prototype as a value)",
  },
  indirect_timer_callback: {
    severity: "warning",
    summary: "a timer is given a callback that is not a function literal",
  },
  unbounded_loop: {
    severity: "warning",
    summary: "a tool that is not read-only is called in a loop, a callback or a function, so it may run many times (its cap is then the run's maxToolCalls)",
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

/** Findings that make a script fail once it runs (the call is refused, the code does not load), whatever policy decided. */
export const FINDINGS_THAT_FAIL_A_RUN: ReadonlySet<FindingCode> = new Set<FindingCode>([
  "syntax_error",
  "type_error",
  "argument_type_error",
  "argument_invalid",
  "disallowed_import",
  "module_syntax",
  "unknown_tool",
  "quarantined_tool",
  "tool_unavailable",
  "undefined_name",
]);

/** docs/codes.md, rendered from the registries above (a test keeps the file in step). */
export function codesMarkdown(): string {
  const rows = (entries: [string, string][]) => entries.map(([code, text]) => `| \`${code}\` | ${text} |`).join("\n");
  return [
    "# Codes",
    "",
    "Generated from `lib/errors.ts` by `npm run docs:codes`; do not edit by hand.",
    "",
    "## Run error codes",
    "",
    "What an agent finds in a run's envelope as `error.code`.",
    "",
    "| code | meaning | what the agent should do next |",
    "|---|---|---|",
    rows(Object.entries(RUN_ERROR_RULES).map(([code, rule]) => [code, `${rule.meaning} | ${rule.next}`])),
    "",
    "## Finding codes",
    "",
    "What analysis reports about a script, each with one fixed severity.",
    "",
    "| code | severity and meaning |",
    "|---|---|",
    rows(Object.entries(FINDING_RULES).map(([code, rule]) => [code, `**${rule.severity}**: ${rule.summary}`])),
    "",
  ].join("\n");
}
