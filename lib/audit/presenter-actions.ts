/**
 * What each audit action means, in one sentence a person reads on a run's timeline: the table
 * covers every action the code records (presenter-actions.test.ts reads lib/ and fails when one
 * is missing). A few sentences name a value from the event's data (a verdict, an outcome, a
 * scope); those values are short strings from closed sets in the code that records them, cut to
 * 80 characters here and rendered inert by the page like any stored text. An unknown action says
 * so instead of guessing.
 */

type Data = Record<string, unknown>;

const word = (value: unknown) => (typeof value === "string" ? value.replaceAll("_", " ").slice(0, 80) : null);

const OUTCOMES: Record<string, string> = {
  answered_user: "answered the user",
  passed_to_tool: "passed it to a tool",
  discarded: "discarded it",
  other: "something else (see the detail)",
};

const ACTIONS: Record<string, string | ((data: Data) => string)> = {
  // A run's life (lib/intake, lib/runs/states.ts: run.<status>, lib/review, lib/runs).
  "run.submitted": "the agent submitted the run",
  "run.refused": "intake refused the submission before it became a run",
  "run.analyzed": "the code was analyzed against the tool registry",
  "run.previewing": "a dry run started, to build the plan of writes reviewers approve",
  "run.denied": "policy denied the run",
  "run.auto_approved": "policy approved the run without a review",
  "run.pending_review": "the run waits for a human review",
  "run.reviewed": (data) => `a reviewer gave a verdict${word(data.verdict) ? `: ${word(data.verdict)}` : ""}`,
  "run.approved": (data) => {
    const standing = data.standingApproval as { use?: unknown; maxUses?: unknown } | undefined;
    if (!standing || typeof standing !== "object") return "the run was approved by its reviewers";
    const use = typeof standing.use === "number" && typeof standing.maxUses === "number" ? ` (use ${standing.use} of ${standing.maxUses})` : "";
    return `a standing approval approved the run instead of reviewers${use}`;
  },
  "run.rejected": "the run was rejected by a reviewer",
  "run.changes_requested": "a reviewer asked for changes to the run",
  "run.expired": "no review came in time; the run expired",
  "run.queued": "the run was queued to execute",
  "run.deferred": "the run was held back so other agents get their share of executors",
  "run.requeued": "the run was queued again after its executor was lost",
  "run.running": "an executor claimed the run and started it",
  "run.succeeded": "the run finished successfully",
  "run.failed": "the run failed",
  "run.timed_out": "the run ran out of time and was stopped",
  "run.cancel_requested": "someone asked to cancel the run",
  "run.cancelled": "the run was cancelled",
  "run.check_failed": "the run finished, and a check it declared failed: its result is withheld from the agent",
  "run.pending_release": "the run finished, and a release policy holds its result until a reviewer releases it",
  "run.withheld": "the run's result is withheld from the agent, by a release policy or a reviewer",
  "run.release_approved": "a reviewer released the withheld result, with a reason",
  "run.result_released": "the reviewers' quorum released the withheld result to the agent",
  "run.result_read": "the agent read the run's result",
  "run.outcome_recorded": (data) =>
    `the agent recorded what it did with the result: ${typeof data.action === "string" ? (OUTCOMES[data.action] ?? word(data.action)) : "(not given)"}`,
  "run.viewed": "a person opened the run in the console",
  "run.artifact_downloaded": "a person downloaded a file the run produced",
  "run.purged": "retention deleted content of the run whose window had ended (its digests stay)",
  "pii_tokens.purged": "retention deleted the values of personal-data tokens not used within the pii window",
  // Sign-in and refusals.
  "auth.login_succeeded": "a person signed in",
  "auth.login_failed": (data) => `a sign-in failed${word(data.reason) ? `: ${word(data.reason)}` : ""}`,
  "auth.signed_out": "a person signed out, ending all their sessions",
  "auth.token_rejected": (data) => `an agent token was refused${word(data.reason) ? `: ${word(data.reason)}` : ""}`,
  "auth.forbidden": (data) => `an action was refused${word(data.scope) ? `: it needs ${word(data.scope)}` : word(data.reason) ? `: ${word(data.reason)}` : ""}`,
  // People, agents, policies, tools, data.
  "user.created": "a user account was created",
  "agent.created": "an agent was registered",
  "agent.revoked": "an agent was revoked, with all its tokens",
  "agent_token.created": "a token was issued to an agent",
  "policy.draft_saved": "a policy draft was saved",
  "policy.proposed": "a policy change was proposed for a second admin's approval",
  "policy.published": "a policy version was published and now decides runs",
  "upstream.registered": "an upstream tool server was registered",
  "tool.acceptance_requested": "acceptance of a changed tool definition was requested",
  "tool.accepted": "a tool definition was accepted for use",
  "tool.override_proposed": "an override of a tool's classification was proposed",
  "tool.override_confirmed": "a second admin confirmed a tool override",
  "tools.searched": "the agent searched the tool registry",
  "patterns.listed": "listed the patterns of runs (scripts run again with other values)",
  // Skills (lib/skills): drafts, replay tests, reviews, standing approvals.
  "skill.drafted": "an admin drafted a skill version from a pattern of runs",
  "skill.tested": (data) =>
    `the skill version's replay tests ran${typeof data.passed === "number" && typeof data.failed === "number" ? `: ${data.passed} passed, ${data.failed} failed` : ""}`,
  "skill.reviewed": (data) => `a reviewer gave a verdict on the skill version${word(data.verdict) ? `: ${word(data.verdict)}` : ""}`,
  "skill.published": "two reviewers approved the skill version; agents can use it",
  "skill.rejected": "a reviewer rejected the skill version",
  "standing_approval.proposed": "an admin proposed a standing approval of a skill version",
  "standing_approval.confirmed": "a second admin confirmed the standing approval; it is in force",
  "standing_approval.revoked": "an admin revoked the standing approval",
  "standing_approval.used": "a standing approval approved a run_skill call instead of reviewers",
  "inputs.listed": "the agent listed the data sets it may use",
  "dataset.created": "a data set was added",
  "hold.placed": "a legal hold was placed: retention deletes nothing under it",
  "hold.released": "a legal hold was released",
  // The log's own reads and checks.
  "audit.searched": "a person searched the audit log",
  "audit.viewed": "a person opened this run's audit timeline",
  "audit.exported": "the audit log was exported",
  "audit.evidence_exported": "an evidence package was exported",
  "audit.verified": (data) => (data.ok === false ? "the audit log was verified and a problem was found" : "the audit log was verified intact"),
  "audit.checkpointed": "a signed checkpoint of the audit log was made",
};

/** The sentence for `action`; an action the table does not know says so. */
export function describeAction(action: string, data: unknown): string {
  const entry = ACTIONS[action];
  if (entry === undefined) return `${action} (no description for this action)`;
  return typeof entry === "string" ? entry : entry(data !== null && typeof data === "object" && !Array.isArray(data) ? (data as Data) : {});
}

/** The actions the table describes (for the coverage test). */
export const DESCRIBED_ACTIONS: readonly string[] = Object.keys(ACTIONS);
