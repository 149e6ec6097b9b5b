/**
 * A run's status as a badge, coloured by one mapping for every page that lists runs (the run
 * page, the runs list, the queue, the audit search and timeline): a reviewer learns the colours
 * once. The mapping is exhaustive over RunStatus, so a new state must be given a tone here.
 */
import type { ComponentProps } from "react";
import type { RunStatus } from "@/lib/contracts/run-states";
import { Badge, type Tone } from "./primitives";

/** good: ran and succeeded · info: on its way to running · warn: waits for a person or was sent back · bad: refused or failed · neutral: stopped. */
export const RUN_STATUS_TONE = {
  submitted: "info",
  analyzed: "info",
  previewing: "info",
  auto_approved: "info",
  approved: "info",
  queued: "info",
  running: "info",
  pending_review: "warn",
  pending_release: "warn",
  changes_requested: "warn",
  succeeded: "good",
  denied: "bad",
  rejected: "bad",
  failed: "bad",
  timed_out: "bad",
  check_failed: "bad",
  withheld: "bad",
  expired: "neutral",
  cancelled: "neutral",
} as const satisfies Record<RunStatus, Tone>;

export function runStatusTone(status: string): Tone {
  return Object.hasOwn(RUN_STATUS_TONE, status) ? RUN_STATUS_TONE[status as RunStatus] : "neutral";
}

/**
 * `status` in words ("pending review"), with `data-status` holding the value itself. Two ends are
 * not what their status alone says, and show as a warning with their error code: a run that
 * succeeded past a failure it swallowed (SWALLOWED_FAILURE), and a run that ran and expired with
 * its result never released (RELEASE_EXPIRED: its writes stand, unlike a review that expired).
 */
export function StatusBadge({
  status,
  errorCode = null,
  ...props
}: { status: string; errorCode?: string | null } & Omit<ComponentProps<typeof Badge>, "tone" | "children">) {
  const flawed = (status === "succeeded" && errorCode !== null) || (status === "expired" && errorCode === "RELEASE_EXPIRED");
  return (
    <Badge tone={flawed ? "warn" : runStatusTone(status)} data-status={status} {...props}>
      {status.replaceAll("_", " ")}
      {flawed ? `, ${errorCode === "RELEASE_EXPIRED" ? "result never released" : errorCode!.toLowerCase().replaceAll("_", " ")}` : null}
    </Badge>
  );
}
