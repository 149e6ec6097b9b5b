/**
 * Reading runs: the agent's view of a run (decision, reasons, reviewer comments and, once it ran,
 * the envelope with a result capped for the model) and get_run's long poll. Submitting is
 * lib/intake/submit.ts; cancelling is ./cancel.ts. The MCP tools, the console and the CLI all
 * call these; none of them has logic of its own.
 *
 * What the view guarantees the agent: every error carries `next`, what to do about it
 * (lib/errors.ts RUN_ERROR_RULES); a run still in progress carries `next` too (how to wait for
 * it); `consoleUrl` is the run's page for people. Once the run ran: its checks (the host's
 * verdicts), assumptions and lineage (rows read per tool, rows returned), logs once and capped at
 * MAX_LOGS_BYTES_FOR_AGENT, the result capped at MAX_RESULT_BYTES_FOR_AGENT — and no result at
 * all for a `check_failed` run until reviewers release it (lib/review/release.ts), after which the
 * result is handed over with who released it and the error is gone. Personal data in all of it
 * (result, logs, error, checks, plan) reaches the agent as the run's tokens (./pii-tokens.ts).
 */
import { z } from "zod";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Finding } from "@/lib/contracts/analysis";
import { EXECUTED_STATUSES, IN_PROGRESS_STATUSES, shownErrorCode } from "@/lib/contracts/run-states";
import type { ToolFacts } from "@/lib/contracts/tools";
import type { Db } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import { consoleBaseUrl } from "@/lib/env";
import { AppError, FINDINGS_THAT_FAIL_A_RUN, RUN_ERROR_RULES, invalidArguments, type RunErrorCode } from "@/lib/errors";
import type { Run } from "@/lib/generated/prisma/client";
import { runColumn } from "@/lib/contracts/run-columns";
import { touchesRegulatedData } from "@/lib/contracts/data-classes";
import { runTokens, tokenized } from "./pii-tokens";
import type { LocalStart } from "./queue";
import { POLL_MS, type ArmedWait, type RunChanges } from "./run-changes";
import { RUN_LIMIT_DEFAULTS, type IsolationLevel } from "@/lib/sandbox/types";

export type AgentActor = Extract<Actor, { type: "agent" }>;

/** What the run service needs from the rest of the system. */
export type RunDeps = {
  db: Db;
  registry: {
    /** Server-side facts of every registered tool, quarantined ones included. */
    toolFacts(): readonly ToolFacts[];
    /** `declare const tools: {…}` for type-checking scripts. */
    declarations(): string;
    /** Import specifiers scripts may use (packages and sandbox-permitted builtins). */
    allowedImports(): readonly string[];
    /** Configured upstreams that could not be connected (their tools are not registered meanwhile). */
    unavailableServers(): readonly string[];
    /** Brings the facts up to date with what admins decided in any process: tool overrides confirmed, quarantined tools accepted. */
    refresh(): Promise<void>;
  };
  /** Starts executing a queued run (in this process or through the job queue); never throws. */
  startExecution(runId: string): void;
  /** An idle executor slot of this process, for intake to claim a run it stores queued in its own transaction; null when none is idle. */
  reserveStart?(): LocalStart | null;
  /** Starts the plan preview of a `previewing` run (lib/runs/preview.ts) through the job queue; never throws. */
  startPreview(runId: string): void;
  /** The sandbox level runs execute at, which policy decides on (lib/runs/isolation.ts). */
  isolation: IsolationLevel;
  /** Pushed run changes (./run-changes.ts) that end a wait at once; without them, waits poll. */
  changes?: RunChanges;
  /** Settings remembered until they change (lib/db/remembered.ts): the published policy intake decides on. */
  remembered?: Remembered;
};

/** Bytes of result JSON an agent gets back; the audit log keeps all of it. */
export const MAX_RESULT_BYTES_FOR_AGENT = 16 * 1024;
/** Bytes of log text an agent gets back; the audit log keeps all of it. */
export const MAX_LOGS_BYTES_FOR_AGENT = 16 * 1024;
/** The longest get_run wait an agent may ask for, in seconds. */
export const MAX_WAIT_SECONDS = 60;
/**
 * The longest a wait holds a request: MCP clients time a request out after 60 s (the SDK's
 * default), so a wait of 60 answered just after they gave up. Waits end by 55 s, still in progress.
 */
export const WAIT_CAP_MS = 55_000;

export type RunView = {
  runId: string;
  status: Run["status"];
  decision: Run["decision"];
  reasons: { policyId: string; text: string }[];
  approvalsRequired?: number;
  approvals?: { approvedBy: string[]; required: number };
  capabilitySet: string[];
  findings: Pick<Finding, "code" | "severity" | "message" | "line" | "column">[];
  comments: { verdict: string; comment: string; at: string }[];
  /** The run's page in the console, for people. */
  consoleUrl: string;
  /** While the run is in progress: how to wait for it. */
  next?: string;
  /** `next`: what the agent should do about it; `detail`: the frames of the script's stack (whole lines, last 4 KiB). */
  error?: { code: RunErrorCode; message: string; untrusted: boolean; next: string; detail?: string };
  /** The writes its plan preview intercepted, in order: what reviewers approve and the run must follow (lib/runs/preview.ts). */
  plan?: { seq: number; server: string; tool: string; arguments: unknown }[];
  result?: unknown;
  logs?: { level: string; text: string }[];
  stats?: { wallMs: number; cpuMs: number; peakRssMb: number; toolCalls: number };
  flags?: string[];
  truncated?: boolean;
  isolation?: string | null;
  /** The checks the script declared, as the host decided them. */
  checks?: { kind: string; label: string; ok: boolean; message: string }[];
  /** What the script said its result assumes (checks.assume). */
  assumptions?: string[];
  /** Why the result is partial, when the script said so (checks.allowPartial). */
  partial?: string;
  /** Lineage: rows each tool returned, rows the script returned, distinct rows its rowCount and sum checks covered. */
  rows?: { read: Record<string, number>; returned: number | null; covered: number | null };
  /** A withheld result (check_failed, or held by release policy), released by reviewers: when, and by whom. */
  released?: { at: string; by: string[] };
};

/** Ends of a run that executed without succeeding whose logs and error text release policy decides on. */
const CONTENT_STATUSES = ["failed", "timed_out", "cancelled"] as const satisfies readonly Run["status"][];

const ERROR_BY_STATUS: Partial<Record<Run["status"], RunErrorCode>> = {
  denied: "POLICY_DENIED",
  rejected: "REVIEW_REJECTED",
  changes_requested: "CHANGES_REQUESTED",
  expired: "REVIEW_EXPIRED",
};

/** The code of the error a run that ended without success shows its agent (its view's `error.code`), or null. */
export function runErrorCode(run: Run): string | null {
  return shownErrorCode(run, runColumn(run, "error")?.code ?? null) ?? ERROR_BY_STATUS[run.status] ?? null;
}

/** The error with what to do next: the code's rule, or `next` where the rule would mislead. */
function withNext(error: { code: RunErrorCode; message: string; untrusted: boolean; detail?: string }, next?: string): NonNullable<RunView["error"]> {
  return { ...error, next: next ?? RUN_ERROR_RULES[error.code].next };
}

const DIRECT_CALL_DENIED_NEXT =
  "Fix what the findings and reasons name (the call's arguments, or the call itself), then call again; the same call will be denied again.";

/** The first log lines that fit MAX_LOGS_BYTES_FOR_AGENT, and whether any were left out. */
function logsForAgent(logs: readonly { level: string; text: string }[]): { logs: { level: string; text: string }[]; cut: boolean } {
  const kept: { level: string; text: string }[] = [];
  let bytes = 0;
  for (const line of logs) {
    const size = Buffer.byteLength(line.text, "utf8");
    if (bytes + size > MAX_LOGS_BYTES_FOR_AGENT) {
      const room = MAX_LOGS_BYTES_FOR_AGENT - bytes;
      if (room > 0)
        kept.push({
          level: line.level,
          text: Buffer.from(line.text, "utf8")
            .subarray(0, room)
            .toString("utf8")
            .replace(/\uFFFD$/, ""),
        });
      return { logs: [...kept, { level: "warn", text: `… ${logs.length - kept.length} more log line(s) are in the audit log` }], cut: true };
    }
    bytes += size;
    kept.push({ level: line.level, text: line.text });
  }
  return { logs: kept, cut: false };
}

/**
 * How the agent that is answered can follow a run that has not finished, for its `next` hint:
 * get_run; only MCP tasks, on a connection whose URL does not offer get_run; or not at all, with a
 * token that lacks runs:read (get_run and tasks/get would both refuse it).
 */
export type Follow = "get_run" | "tasks" | "none";

const FOLLOW_HINT: Record<Follow, string> = {
  get_run: `call get_run with this runId and waitSeconds (at most ${MAX_WAIT_SECONDS}) to wait for it`,
  tasks: "this connection does not offer get_run (its URL's ?tools=), so follow it as an MCP task: tasks/get or tasks/result with this runId as the taskId",
  none: "this token lacks runs:read, so it cannot follow the run or read its result; the console (consoleUrl) shows it, or ask an admin for a token with runs:read",
};

function progressHint(run: Run, follow: Follow): string | undefined {
  const wait = FOLLOW_HINT[follow];
  // A finding that makes a run fail (it does not type-check, say): fixing it beats a reviewer's
  // time, whatever policy decided.
  const failing = (runColumn(run, "findings") ?? []).find((f) => FINDINGS_THAT_FAIL_A_RUN.has(f.code));
  const fixFirst = failing
    ? `The ${failing.code} finding at line ${failing.line} (findings) will most likely make the script fail: fix the script and submit it again, and cancel this run (cancel_run). Otherwise: `
    : "";
  switch (run.status) {
    case "previewing":
      return `${fixFirst}Building the plan of writes reviewers will approve (a dry run; nothing is written): ${wait}.`;
    case "pending_review":
      return `${fixFirst}Waiting for ${run.approvalsRequired} reviewer approval(s) in the console (consoleUrl): ${wait}; tell the user it waits for a reviewer.`;
    case "pending_release": {
      const held = runColumn(run, "releaseDecision");
      const why = held?.reasons.map((r) => r.text).join(" ") ?? "";
      return `The script ran; policy holds its result until ${held?.approvalsRequired ?? 1} reviewer(s) release it in the console (consoleUrl)${why ? `: ${why}` : ""} ${wait}; tell the user the result waits for a reviewer.`;
    }
    case "submitted":
    case "analyzed":
    case "auto_approved":
    case "approved":
    case "queued":
    case "running":
      return `Not finished: ${wait}.`;
    default:
      return undefined;
  }
}

function capForAgent(result: unknown): { result: unknown; truncated: boolean } {
  const text = JSON.stringify(result ?? null);
  if (Buffer.byteLength(text, "utf8") <= MAX_RESULT_BYTES_FOR_AGENT) return { result, truncated: false };
  return {
    result: {
      preview: text.slice(0, MAX_RESULT_BYTES_FOR_AGENT / 2),
      note: `The result is over ${MAX_RESULT_BYTES_FOR_AGENT / 1024} KB, more than an agent is handed: preview is the first ${MAX_RESULT_BYTES_FOR_AGENT / 2048} KB of its JSON text. Return less (aggregate, count or pick fields in the script) and submit again; reviewers and the audit log have it whole.`,
    },
    truncated: true,
  };
}

/** The run each view was built from, for recording what the agent was handed (lib/mcp/audit.ts recordResultRead). */
const viewedRuns = new WeakMap<RunView, Pick<Run, "inputs" | "facts" | "status">>();

/** The stored run `view` was built from (by presentRun), as it was then. */
export function runOfView(view: RunView): Pick<Run, "inputs" | "facts" | "status"> | undefined {
  return viewedRuns.get(view);
}

/**
 * Whether the agent is shown a plan preview's outcome only after its time limit (previewShownAt):
 * the run's reads touch regulated data (a tool's or an input's; facts stored before
 * readOnlyDataClasses existed count every class) and no reviewer approved it yet.
 */
export function previewHeldFromAgent(run: Run): boolean {
  if (run.startedAt !== null) return false;
  const facts = runColumn(run, "facts");
  const inputs = runColumn(run, "inputs") ?? [];
  return touchesRegulatedData([...(facts?.readOnlyDataClasses ?? facts?.dataClasses ?? []), ...inputs.map((input) => input.dataClass)]);
}

/** The kind of a failed preview's failure (PLAN_UNREVIEWABLE, SCRIPT_ERROR, …), which Airlock wrote first in its message. */
function previewFailureKind(message: string): string | null {
  return /^The plan preview failed, so no reviewer was asked\. ([A-Z_]+):/.exec(message)?.[1] ?? null;
}

/** What to do next after a failed preview, by its kind where the code's general advice (credentials) would mislead. */
const PREVIEW_NEXT: Partial<Record<string, string>> = {
  PLAN_UNSTABLE:
    "Make each write's arguments depend only on what the script reads (not on the time or randomness, e.g. an idempotencyKey built from the invoice id), then submit a new run.",
  INVALID_ARGUMENTS: "Make the write's arguments fit its tool's input schema (search_tools with detail full declares it), then submit a new run.",
  SCRIPT_ERROR: "Fix the error the message names, then submit a new run.",
};

/** Past its own time limit, a preview's end shows at once: it says only that the preview was slow. */
const PREVIEW_SHOWN_AFTER_SLACK_MS = 5_000;

/**
 * When the agent may see that a plan preview of regulated reads ended, or null when nothing about
 * the run is held back. The moment a preview ends is the script's to choose (it can wait as long as
 * a value it read says, or make as many calls), so until the time limits of both preview runs have
 * passed since the run was submitted, the agent sees it still previewing, whether it ended in a plan or failed.
 */
export function previewShownAt(run: Run): number | null {
  if (run.startedAt !== null || (run.status !== "pending_review" && run.status !== "failed")) return null;
  const ended = run.status === "pending_review" ? runColumn(run, "plan") !== null : runColumn(run, "error")?.code === "PREVIEW_FAILED";
  if (!ended || !previewHeldFromAgent(run)) return null;
  // The script is previewed twice (lib/runs/preview.ts), each run within the time limit.
  return run.createdAt.getTime() + 2 * (runColumn(run, "limits")?.timeoutMs ?? RUN_LIMIT_DEFAULTS.timeoutMs) + PREVIEW_SHOWN_AFTER_SLACK_MS;
}

/**
 * The run as its agent may see it now (every door: get_run, submit_run's answer, MCP tasks): a plan
 * preview of regulated reads that ended before `previewShownAt` is still previewing, and such a
 * preview's last update is its submission (a claim's or an end's time would tell the same).
 */
export function runAsAgentSees(run: Run, now = Date.now()): Run {
  const shownAt = previewShownAt(run);
  if (shownAt !== null && now < shownAt) {
    return { ...run, status: "previewing", plan: null, error: null, finishedAt: null, releaseDecision: null, updatedAt: run.createdAt };
  }
  if (run.status === "previewing" && previewHeldFromAgent(run)) return { ...run, updatedAt: run.createdAt };
  return run;
}

/** The agent's view of a run: decision with reasons, reviewer comments, and the envelope once finished. */
export async function presentRun(db: Db, stored: Run, follow: Follow = "get_run"): Promise<RunView> {
  const run = runAsAgentSees(stored);
  // Reviewers decide only runs policy escalated (lib/review/service.ts), and only once the plan is
  // ready: a run shown previewing shows no review, or one would tell that its preview ended.
  const reviewed = run.decision === "escalate" && run.status !== "previewing";
  const [reviews, tokens] = await Promise.all([
    reviewed ? db.review.findMany({ where: { runId: run.id }, orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true } } } }) : [],
    runTokens(db, run.id),
  ]);
  const forAgent = <T>(value: T): T => tokenized(value, tokens);
  const reasons = (runColumn(run, "decisionReasons") ?? []).map(({ policyId, text }) => ({ policyId, text }));
  const view: RunView = {
    runId: run.id,
    status: run.status,
    decision: run.decision,
    reasons,
    capabilitySet: runColumn(run, "capabilitySet") ?? [],
    findings: (runColumn(run, "findings") ?? []).map(({ code, severity, message, line, column }) => ({ code, severity, message, line, column })),
    comments: reviews.filter((r) => r.comment).map((r) => ({ verdict: r.verdict, comment: forAgent(r.comment!), at: r.createdAt.toISOString() })),
    consoleUrl: `${consoleBaseUrl()}/runs/${run.id}`,
  };
  const next = progressHint(run, follow);
  if (next) view.next = next;
  // The latest release decision: the plan preview's until the run has executed, then the run's.
  const release = runColumn(run, "releaseDecision");
  // A preview's reads are real, and no reviewer has approved them: what they produced (the plan,
  // why the preview failed) reaches the agent of a run that reads regulated data (a tool or an
  // input) only once the run executed, after reviewers approved it, as a read-only run over that
  // data would run only then (and when it ended, only after its time limit: runAsAgentSees).
  const plan = runColumn(run, "plan");
  // Before reviewers approved a preview of regulated reads, not even the writes' shape (how many,
  // which tools) reaches the agent: a script could spell what it read in it.
  if (plan && !previewHeldFromAgent(run)) {
    // A plan's arguments come from real reads: release policy decides whether the agent reads them.
    const planWithheld = release !== null && release.decision !== "allow" && !run.releasedAt;
    view.plan = plan.writes.map(({ seq, server, tool, arguments: args }) => ({
      seq,
      server,
      tool,
      arguments: planWithheld ? "(withheld by release policy; reviewers see it in the console)" : forAgent(args),
    }));
  }
  if (run.decision === "escalate") {
    view.approvalsRequired = run.approvalsRequired;
    view.approvals = { approvedBy: reviews.filter((r) => r.verdict === "approve").map((r) => r.reviewer.email), required: run.approvalsRequired };
  }
  const statusError = ERROR_BY_STATUS[run.status];
  if (statusError) {
    // An agent acts on the specific finding first (the line, what is wrong, a suggestion), then the deciding policies.
    const blocking = view.findings.filter((f) => f.severity === "critical" || f.severity === "error").slice(0, 5);
    // A direct call's agent wrote no script: a position in the one Airlock wrote for it means nothing to it.
    const direct = run.kind === "direct";
    const fix = blocking.map((f) => `${direct ? "" : `line ${f.line}:${f.column}: `}${f.message} (${f.code})`).join("; ");
    const message =
      statusError === "POLICY_DENIED"
        ? `${fix ? `${fix}. ` : ""}Denied by policy: ${reasons.map((r) => r.text).join(" ")}`
        : statusError === "REVIEW_EXPIRED"
          ? "No reviewer decided before the review expired."
          : `A reviewer decided: ${run.status.replaceAll("_", " ")}.`;
    // Finding messages quote the script (names, arguments): text from outside Airlock.
    view.error = withNext(
      { code: statusError, message, untrusted: statusError === "POLICY_DENIED" && fix !== "" },
      direct && statusError === "POLICY_DENIED" ? DIRECT_CALL_DENIED_NEXT : undefined,
    );
  }
  // The one rule every list shows it by (run-states.ts shownErrorCode): it ran, then expired held.
  if (shownErrorCode(run, null) === "RELEASE_EXPIRED") {
    const why = (release?.reasons ?? []).map((r) => r.text).join(" ");
    view.error = withNext({
      code: "RELEASE_EXPIRED",
      message: `No reviewer released the result before the hold expired. It was held because: ${why}`,
      untrusted: false,
    });
  }
  const error = runColumn(run, "error");
  if (error) view.error = withNext(forAgent(error), error.code === "PREVIEW_FAILED" ? PREVIEW_NEXT[previewFailureKind(error.message) ?? ""] : undefined);
  if (error?.code === "PREVIEW_FAILED" && previewHeldFromAgent(run)) {
    // Only the kind of failure, which Airlock wrote, stays: the agent can act on it. Which write
    // failed is the script's to choose (how many it made first), so it could count out what it read.
    const cause = previewFailureKind(error.message);
    view.error = withNext({
      code: "PREVIEW_FAILED",
      message: `The plan preview failed${cause ? ` (${cause})` : ""}, so no reviewer was asked. The rest of its error text is withheld: the preview read regulated data that no reviewer has approved (reviewers and the audit log have it).`,
      untrusted: false,
    });
  }
  if (run.finishedAt && (EXECUTED_STATUSES as readonly string[]).includes(run.status)) {
    const execution = runColumn(run, "execution");
    // Withheld means withheld: no result, and nothing the script wrote that could carry it (logs,
    // assumptions, a partial reason, an error's text and stack, the labels of checks that passed,
    // the run's figures).
    // A run that failed keeps its logs and error text from the agent when release policy did not
    // hand them over: they can carry what a result would.
    const failedWithheld = release !== null && release.decision !== "allow" && (CONTENT_STATUSES as readonly string[]).includes(run.status);
    const withheld = (run.status === "check_failed" && !run.releasedAt) || run.status === "withheld" || failedWithheld;
    // Held by release policy too, a failed check's label and message (text the script wrote from
    // what it read) stay with reviewers as the result does; the agent learns which kinds failed.
    const heldByRelease = run.status === "check_failed" && !run.releasedAt && release !== null && release.decision !== "allow";
    // A failed preview already says only its kind of failure where its reads were regulated (above).
    if ((failedWithheld || heldByRelease) && view.error && !(error?.code === "PREVIEW_FAILED" && previewHeldFromAgent(run))) {
      const why = release.reasons.map((r) => r.text).join(" ");
      const cause = error?.code === "PREVIEW_FAILED" ? previewFailureKind(error.message) : null;
      view.error = withNext({
        code: view.error.code,
        message:
          error?.code === "PREVIEW_FAILED"
            ? `The plan preview failed${cause ? ` (${cause})` : ""}, so no reviewer was asked; release policy keeps the rest of its error text from the agent: ${why}`
            : `The run ended ${run.status.replaceAll("_", " ")}; release policy keeps its error text and logs from the agent: ${why}`,
        untrusted: false,
      });
    }
    if (withheld && view.error) delete view.error.detail;
    const capped = capForAgent(forAgent(run.result));
    const logs = withheld
      ? { logs: [{ level: "warn", text: "The logs are withheld with the result." }], cut: false }
      : logsForAgent(forAgent(execution?.logs ?? []));
    if (!withheld) view.result = capped.result;
    view.logs = logs.logs;
    // A run's flags and truncation say what the script did (returned nothing, swallowed an error, wrote much): withheld too.
    view.flags = withheld ? [] : (execution?.flags ?? []);
    view.truncated = !withheld && (capped.truncated || logs.cut || Boolean(execution?.truncated));
    // Wall and CPU time, memory and the number of tool calls are the script's to choose too.
    if (execution && !withheld)
      view.stats = { wallMs: execution.wallMs, cpuMs: execution.cpuMs, peakRssMb: execution.peakRssMb, toolCalls: execution.toolCalls };
    view.isolation = run.isolation;
    const gate = execution?.gate;
    if (gate) {
      // Withheld, the agent learns which checks failed (at most three), not what the script wrote in the others.
      const shown = withheld ? gate.checks.filter((c) => !c.ok).slice(0, 3) : gate.checks;
      view.checks = heldByRelease
        ? shown.map(({ kind, ok }) => ({ kind, label: "(withheld with the result)", ok, message: "" }))
        : forAgent(shown.map(({ kind, label, ok, message }) => ({ kind, label, ok, message })));
      view.assumptions = withheld ? [] : forAgent(gate.assumptions);
      if (gate.partial !== null && !withheld) view.partial = forAgent(gate.partial);
      // How many rows a withheld result held is the script's to choose, so it could carry the result; where
      // release policy keeps what the run read from the agent, so is how many each tool returned (its limit argument).
      const heldForWhatItRead = failedWithheld || heldByRelease || run.status === "withheld";
      if (!heldForWhatItRead) view.rows = withheld ? { ...gate.rows, returned: null } : gate.rows;
    }
    if (run.releasedAt) {
      const releases = await db.resultRelease.findMany({
        where: { runId: run.id },
        orderBy: { createdAt: "asc" },
        include: { reviewer: { select: { email: true } } },
      });
      view.released = { at: run.releasedAt.toISOString(), by: releases.map((r) => r.reviewer.email) };
      delete view.error;
    }
  }
  viewedRuns.set(view, run);
  return view;
}

/** get_run's arguments: the one schema the MCP tool publishes and the service enforces. */
export const getRunSchema = z
  .object({
    runId: z.uuid("runId must be a run id from submit_run"),
    waitSeconds: z.number().min(0).max(MAX_WAIT_SECONDS).default(0),
  })
  .strict();

/**
 * A run as its agent sees it; with waitSeconds, once it is no longer in progress (or its plan is
 * ready) or the wait is over. A wait ends on the pushed change when `deps.changes` is given (armed
 * before each read, so no change falls between them), else at the next poll; a run that ended its
 * execution in this process is answered with the row the executor committed, without a read.
 */
export async function getRun(deps: Pick<RunDeps, "db" | "changes">, actor: AgentActor, raw: unknown, signal?: AbortSignal): Promise<RunView> {
  requireScope(actor, "runs:read");
  const parsed = getRunSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  return watchRun(deps, actor, parsed.data.runId, parsed.data.waitSeconds, signal);
}

/**
 * getRun's wait, for a caller that may read runs. `first` is the run as the caller has just stored
 * it, with a wait armed before it was stored (intake's answer): it stands for the first read.
 */
export async function watchRun(
  deps: Pick<RunDeps, "db" | "changes">,
  actor: AgentActor,
  runId: string,
  waitSeconds: number,
  signal?: AbortSignal,
  first?: { run: Run; armed: ArmedWait | undefined },
  follow: Follow = "get_run",
): Promise<RunView> {
  const deadline = Date.now() + Math.min(waitSeconds * 1000, WAIT_CAP_MS);
  let previewing = false;
  let next = first;
  for (;;) {
    const armed = next ? next.armed : waitSeconds > 0 ? deps.changes?.arm(runId) : undefined;
    const run =
      next?.run ??
      (await deps.db.run.findFirst({ where: { id: runId, agentId: actor.id } }).catch((error: unknown) => {
        armed?.cancel();
        throw error;
      }));
    next = undefined;
    // As the agent may see it: a preview of regulated reads that ended shows only at its time limit.
    const seen = run && runAsAgentSees(run);
    // A wait that began during the plan preview ends when the plan is ready, so the agent sees it.
    const planReady = previewing && seen?.status !== "previewing";
    previewing ||= seen?.status === "previewing";
    const waiting = seen !== null && (IN_PROGRESS_STATUSES as readonly string[]).includes(seen.status) && !planReady;
    if (!run || !waiting || Date.now() >= deadline || signal?.aborted) {
      armed?.cancel();
      if (!run) throw new AppError("not_found", `No run ${runId} for this agent.`);
      return presentRun(deps.db, run, follow);
    }
    // Held back until it may be shown: wake then, or at the next change (a reviewer's), whichever is first.
    const shownAt = seen !== run ? previewShownAt(run) : null;
    const left = Math.max(0, Math.min(deadline, shownAt ?? deadline) - Date.now());
    if (!armed) await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
    else {
      // A row handed over by this process's executor stands for the next read when it has settled;
      // one still in progress is read again, so that the next wait is armed before its read.
      const handed = await armed.wait(left, signal);
      if (handed && handed.agentId === actor.id && !(IN_PROGRESS_STATUSES as readonly string[]).includes(handed.status)) {
        next = { run: handed, armed: undefined };
      }
    }
  }
}
