/**
 * The run state table: every status classified (exhaustive record), terminal states without a
 * way out. Pure data shared by every layer; the only writer of a run's status is
 * lib/runs/states.ts `transitionRun`, which refuses anything outside this table.
 */
import type { RunStatus } from "@/lib/generated/prisma/enums";

export type { RunStatus };

export const NEXT_STATES = {
  submitted: ["analyzed"],
  analyzed: ["denied", "auto_approved", "pending_review", "previewing"],
  // previewing: a dry run builds the plan of writes (lib/runs/preview.ts); reads are real, writes intercepted.
  previewing: ["pending_review", "failed", "cancelled"],
  pending_review: ["approved", "rejected", "changes_requested", "expired", "cancelled"],
  auto_approved: ["queued", "cancelled"],
  approved: ["queued", "cancelled"],
  queued: ["running", "cancelled", "failed"],
  // running → queued: the executor was lost before anything with an effect could have happened,
  // at most once per run (Run.attempt), never after a cancel request (lib/runs/recovery.ts).
  // check_failed: the script finished and a check it declared failed (lib/sandbox/checks.ts).
  // pending_release / withheld: it succeeded, and release policy held or withheld the result
  // (lib/runs/release-decision.ts).
  running: ["succeeded", "failed", "timed_out", "cancelled", "check_failed", "pending_release", "withheld", "queued"],
  // Reviewers release the result (succeeded) or withhold it; or nobody decides in time.
  pending_release: ["succeeded", "withheld", "expired"],
  denied: [],
  rejected: [],
  changes_requested: [],
  expired: [],
  succeeded: [],
  failed: [],
  timed_out: [],
  cancelled: [],
  check_failed: [],
  withheld: [],
} as const satisfies Record<RunStatus, readonly RunStatus[]>;

export const RUN_STATUSES = Object.keys(NEXT_STATES) as RunStatus[];

export function isTerminal(status: RunStatus): boolean {
  return NEXT_STATES[status].length === 0;
}

export const TERMINAL_STATUSES = RUN_STATUSES.filter(isTerminal);

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return (NEXT_STATES[from] as readonly RunStatus[]).includes(to);
}

/** The audit action of the one transition not named `run.<to>`: a lost executor's run queued again. */
export const REQUEUED_ACTION = "run.requeued";

/** The status an audit action moved a run to (`run.<state>`, or REQUEUED_ACTION); null for other events. */
export function statusOfAction(action: string): RunStatus | null {
  if (action === REQUEUED_ACTION) return "queued";
  const state = action.startsWith("run.") ? action.slice(4) : "";
  return (RUN_STATUSES as readonly string[]).includes(state) ? (state as RunStatus) : null;
}

/** States from which a cancel stops a run without a sandbox to kill. */
export const CANCELLABLE_BEFORE_START = ["previewing", "pending_review", "auto_approved", "approved", "queued"] as const satisfies readonly RunStatus[];

/** States in which an agent waiting on get_run keeps waiting. */
export const IN_PROGRESS_STATUSES = [
  "submitted",
  "analyzed",
  "previewing",
  "pending_review",
  "auto_approved",
  "approved",
  "queued",
  "running",
  "pending_release",
] as const satisfies readonly RunStatus[];

/** States a run ends in after it was executed (the envelope's statuses), and where policy put its result. */
export const EXECUTED_STATUSES = ["succeeded", "failed", "timed_out", "cancelled", "check_failed", "withheld"] as const satisfies readonly RunStatus[];

/**
 * A run's error code as lists show it: the stored one, or RELEASE_EXPIRED for a run that ran and
 * then expired waiting for a reviewer to release its result (only such a run has a release
 * deadline). That code is derived, not stored: the run's error column was sealed in the audit chain
 * when it ran. Its writes stand, which a plain `expired` would hide. RELEASE_EXPIRED_SQL is the same
 * rule for a query whose run is `r`.
 */
export function shownErrorCode(run: { status: string; releaseExpiresAt: Date | null }, storedCode: string | null): string | null {
  if (storedCode !== null) return storedCode;
  return run.status === "expired" && run.releaseExpiresAt !== null ? "RELEASE_EXPIRED" : null;
}

export const RELEASE_EXPIRED_SQL = `(r.status = 'expired' AND r."releaseExpiresAt" IS NOT NULL)`;
