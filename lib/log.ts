/**
 * The operator's log (pino): one line per run state change, with the policy's decision on the line
 * that records it and the review link on an escalation, and one line per reviewer's vote. Each
 * process logs what it changed itself, once the change has committed (lib/db.ts `afterCommit`),
 * so a line never reports a change that rolled back and no change is logged by two processes.
 *
 * Format: `AIRLOCK_LOG_FORMAT` — `pretty` (one readable line, for a terminal) or `json` (one object
 * per line, for collectors); unset, pretty when stdout is a terminal and JSON otherwise.
 * `AIRLOCK_LOG_LEVEL` filters (`silent` for tests; the CLI's default, see logOnlyWhenAsked).
 * Lines carry identifiers, statuses, policy ids and links, never code, arguments, results or
 * reviewer comments.
 */
import pino, { type Logger } from "pino";
import pretty from "pino-pretty";
import type { Actor } from "@/lib/contracts/scopes";
import { consoleBaseUrl, env } from "@/lib/env";

let cached: Logger | undefined;
let defaultLevel = "info";

/** Fields a pretty line leaves out: its message already says them. */
const PRETTY_IGNORED = "pid,hostname,event,runId,from,to,decision,reasons,reviewUrl,approvalsRequired,code,reviewer,verdict,approvals";

/** The process's logger, made on first use from the environment. */
export function log(): Logger {
  if (!cached) {
    const config = env();
    const format = config.AIRLOCK_LOG_FORMAT ?? (process.stdout.isTTY ? "pretty" : "json");
    const options = { level: config.AIRLOCK_LOG_LEVEL ?? defaultLevel, base: { pid: process.pid } };
    cached =
      format === "pretty"
        ? pino(options, pretty({ sync: true, colorize: process.stdout.isTTY, singleLine: true, ignore: PRETTY_IGNORED, translateTime: "SYS:HH:MM:ss.l" }))
        : pino(options, pino.destination({ sync: true }));
  }
  return cached;
}

/** For commands whose output is their answer (`npx airlock …`): nothing is logged unless AIRLOCK_LOG_LEVEL asks. */
export function logOnlyWhenAsked(): void {
  defaultLevel = "silent";
  cached = undefined;
}

/** How a line names who acted: a person or agent by id, the system by its part. */
/** Who, as an operator reads it: a person by email (with their id), an agent by name (with its id), the system by its part. */
function actorName(actor: Actor): string {
  if (actor.type === "system") return `system:${actor.name}`;
  return `${actor.type === "user" ? actor.email : actor.name} (${actor.type}:${actor.id})`;
}

export type RunChangeLine = {
  runId: string;
  from: readonly string[];
  to: string;
  actor: Actor;
  /** The policy's decision, on the transition that records it. */
  decision?: { decision: string; reasons: readonly string[]; approvalsRequired?: number | null };
  /** The error code of a run that ended without success. */
  code?: string | null;
};

/** Logs one committed change of a run's status. */
export function logRunChange(line: RunChangeLine): void {
  const fields: Record<string, unknown> = { event: "run.status", runId: line.runId, from: line.from.join("|"), to: line.to, actor: actorName(line.actor) };
  let message = `run ${line.runId} ${line.from.join("|")} → ${line.to}`;
  if (line.decision) {
    fields.decision = line.decision.decision;
    fields.reasons = line.decision.reasons;
    message += ` (policy: ${line.decision.decision}${line.decision.reasons.length > 0 ? `; ${line.decision.reasons.join(", ")}` : ""})`;
  }
  if (line.code) {
    fields.code = line.code;
    message += ` ${line.code}`;
  }
  if (line.to === "pending_review" || line.to === "pending_release") {
    const reviewUrl = `${consoleBaseUrl()}/runs/${line.runId}`;
    fields.event = line.to === "pending_review" ? "run.escalated" : "run.held";
    fields.reviewUrl = reviewUrl;
    if (line.decision?.approvalsRequired) fields.approvalsRequired = line.decision.approvalsRequired;
    message += ` — review: ${reviewUrl}`;
  }
  log().info(fields, message);
}

/** Logs one reviewer's committed vote. */
export function logReviewVote(vote: { runId: string; reviewerId: string; reviewerEmail: string; verdict: string; received: number; required: number }): void {
  log().info(
    {
      event: "run.reviewed",
      runId: vote.runId,
      reviewer: vote.reviewerId,
      reviewerEmail: vote.reviewerEmail,
      verdict: vote.verdict,
      approvals: vote.received,
      approvalsRequired: vote.required,
    },
    `run ${vote.runId} ${vote.verdict} by ${vote.reviewerEmail} (user:${vote.reviewerId}; ${vote.received} of ${vote.required} approvals)`,
  );
}
