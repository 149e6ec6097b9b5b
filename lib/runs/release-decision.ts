/**
 * The release decision: whether what a run produced reaches its agent. For a run that succeeded:
 * hand the result over now, hold it for reviewers (`pending_release`), or withhold it (`withheld`).
 * For one that failed, timed out, was cancelled or failed a check: whether its logs and error text
 * (which can carry the same data as a result) reach the agent (lib/runs/service.ts presentRun), and
 * how many reviewers a failed check's release needs (lib/review/release.ts). For a plan preview
 * (lib/runs/preview.ts), on its reads and its plan: whether the plan's arguments, or why the
 * preview failed, reach the agent before the run executes. The published policy's
 * release policies decide (lib/policy/decide.ts decideRelease), on what the gate saw: the run's
 * flags (`upstream_instruction_like` when a tool returned text that reads like instructions to the
 * model, `unreviewed_personal_data` when a script no person reviewed read personal data from a
 * tool), the result's size as JSON, and the run's data classes as intake decided them.
 *
 * Guarantees:
 * - decided in the host, on the screened envelope, before the write that stores it; the
 *   decision, the request it was made on and the policy version are stored with the run
 *   (`Run.releaseDecision`) and carried by the run's terminal event;
 * - fail closed: with no published policy, or a decision that cannot be made, the result is
 *   withheld (deny, with the reason);
 * - a hold lasts as long as a review does (AIRLOCK_REVIEW_TTL_HOURS), then the run expires
 *   (./expiry.ts).
 */
import { runColumn, type RunColumnValue } from "@/lib/contracts/run-columns";
import type { Db } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import type { Run } from "@/lib/generated/prisma/client";
import { BUILTIN_REASONS, decideRelease } from "@/lib/policy/decide";
import { buildReleaseRequest } from "@/lib/policy/request";
import { publishedPolicy } from "@/lib/policy/store";
import { env } from "@/lib/env";
import type { Envelope } from "@/lib/sandbox";

export const UPSTREAM_INSTRUCTIONS_FLAG = "upstream_instruction_like";
export const UNREVIEWED_PERSONAL_DATA_FLAG = "unreviewed_personal_data";

/** When a result held now stops waiting for a reviewer: as long as a review waits. */
export function releaseHoldEnds(from: Date): Date {
  return new Date(from.getTime() + env().AIRLOCK_REVIEW_TTL_HOURS * 3_600_000);
}

export type ReleaseDecision = RunColumnValue<"releaseDecision">;

/** The status a succeeded run ends in under its release decision. */
export function statusAfterRelease(decision: ReleaseDecision): "succeeded" | "pending_release" | "withheld" {
  return decision.decision === "allow" ? "succeeded" : decision.decision === "escalate" ? "pending_release" : "withheld";
}

/** The data classes intake decided the run on (its tools' and inputs'), from its stored policy request. */
function decidedDataClasses(request: RunColumnValue<"policyRequest"> | null): string[] {
  const proposal = request?.entities.find((entity) => entity.uid.type === "Proposal");
  const classes = proposal?.attrs.dataClasses;
  return Array.isArray(classes) ? classes.filter((c): c is string => typeof c === "string") : [];
}

/**
 * The agent's owner as intake put it in the run's policy request, from the authenticated agent (an
 * agent's owner never changes); null when the stored request does not name it for this agent.
 */
function decidedOwner(request: RunColumnValue<"policyRequest"> | null, agentId: string): string | null {
  const agent = request?.entities.find((entity) => entity.uid.type === "Agent" && entity.uid.id === agentId);
  const owner = agent?.attrs.owner;
  const uid = owner && typeof owner === "object" && "__entity" in owner ? (owner.__entity as { type?: unknown; id?: unknown }) : null;
  return uid?.type === "User" && typeof uid.id === "string" ? uid.id : null;
}

/** The run's agent and its owner: as decided at intake, or read when the stored request does not say. */
async function runAgent(db: Db, run: Pick<Run, "agentId">, request: RunColumnValue<"policyRequest"> | null) {
  const ownerId = decidedOwner(request, run.agentId);
  if (ownerId !== null) return { id: run.agentId, ownerId };
  return db.agent.findUniqueOrThrow({ where: { id: run.agentId }, select: { id: true, ownerId: true } });
}

/**
 * The release decision for a run whose screened envelope succeeded. Never throws: when it cannot
 * be made (no published version, a malformed stored request, the database), the result is withheld.
 */
export async function decideResultRelease(
  db: Db,
  run: Pick<Run, "id" | "agentId" | "policyRequest">,
  envelope: Pick<Envelope, "flags" | "result">,
  /** The runtime's settings remembered until they change (lib/db/remembered.ts); without it, the published policy is read. */
  remembered?: Remembered,
): Promise<ReleaseDecision> {
  const flags = envelope.flags;
  const bytes = Buffer.byteLength(JSON.stringify(envelope.result ?? null), "utf8");
  let built = buildReleaseRequest({ agent: { id: run.agentId, ownerId: "" }, flags, bytes, dataClasses: [] });
  try {
    const request = runColumn(run, "policyRequest");
    const [agent, published] = await Promise.all([runAgent(db, run, request), publishedPolicy(db, remembered)]);
    built = buildReleaseRequest({ agent, flags, bytes, dataClasses: decidedDataClasses(request) });
    if (!published) throw new Error("no policy version is published");
    const decided = decideRelease(built, published.prepared);
    return {
      decision: decided.decision,
      approvalsRequired: decided.approvalsRequired,
      ...(decided.reviewerRole ? { reviewerRole: decided.reviewerRole } : {}),
      reasons: decided.reasons,
      policyVersionId: published.id,
      request: built as ReleaseDecision["request"],
    };
  } catch (error) {
    // The cause stays in the server's log: an agent reads these reasons.
    console.error(`run ${run.id}: the release could not be decided; withholding`, error);
    const text = "The release could not be decided, so the result is withheld; the server's log has the cause.";
    // Built with plain { type, id } uids only, which is the stored shape.
    return {
      decision: "deny",
      approvalsRequired: 0,
      reasons: [{ policyId: BUILTIN_REASONS.evaluationError, text, source: "" }],
      policyVersionId: null,
      request: built as ReleaseDecision["request"],
    };
  }
}

/** What the terminal write of a run that succeeded stores under its release decision. */
export function releaseOutcome(decision: ReleaseDecision, now: Date) {
  const status = statusAfterRelease(decision);
  return {
    status,
    releaseExpiresAt: status === "pending_release" ? releaseHoldEnds(now) : null,
    error:
      status === "withheld"
        ? {
            code: "RESULT_WITHHELD" as const,
            message: `Release policy withholds the result: ${decision.reasons.map((r) => r.text).join(" ")}`,
            untrusted: false,
          }
        : null,
  };
}
