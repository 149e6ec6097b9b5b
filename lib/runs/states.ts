/**
 * The run state machine of DESIGN.md "Run states". Every status is classified (exhaustive
 * record), terminal states never change, and a transition not listed here cannot be written by
 * lib/runs (transition() refuses it before touching the database).
 */
import type { RunStatus } from "@/lib/generated/prisma/enums";

export const NEXT_STATES = {
  submitted: ["analyzed"],
  analyzed: ["denied", "auto_approved", "pending_review"],
  pending_review: ["approved", "rejected", "changes_requested", "expired", "cancelled"],
  auto_approved: ["queued", "cancelled"],
  approved: ["queued", "cancelled"],
  queued: ["running", "cancelled", "failed"],
  // running → queued only when the executor was lost and every tool the run may call is idempotent.
  running: ["succeeded", "failed", "timed_out", "cancelled", "queued"],
  denied: [],
  rejected: [],
  changes_requested: [],
  expired: [],
  succeeded: [],
  failed: [],
  timed_out: [],
  cancelled: [],
} as const satisfies Record<RunStatus, readonly RunStatus[]>;

export function isTerminal(status: RunStatus): boolean {
  return NEXT_STATES[status].length === 0;
}

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return (NEXT_STATES[from] as readonly RunStatus[]).includes(to);
}

/** States from which cancel_run stops a run without a sandbox to kill. */
export const CANCELLABLE_BEFORE_START = ["pending_review", "auto_approved", "approved", "queued"] as const satisfies readonly RunStatus[];
