/**
 * Three outcomes from a two-outcome engine.
 *
 * Cedar answers permit or deny and names the determining policies (`diagnostics.reason`): the
 * matching forbids when it denies, the matching permits when it allows. Airlock reads that
 * answer together with each policy's annotations (policy-set.ts):
 *   1. any evaluation problem (request rejected by the schema, a policy erroring, a policy id
 *      Airlock does not know, an exception)            → deny, reasons name the problem;
 *   2. Cedar denies with determining forbids            → deny, reasons = those forbids;
 *   3. Cedar denies with none                           → deny by default (no permit matched);
 *   4. Cedar allows and some determining permit has
 *      @approvals                                      → escalate: the most approvals any of
 *                                                         them asks for, from that policy's role;
 *                                                         reasons = the escalating permits;
 *   5. otherwise                                       → allow, reasons = the matching permits.
 * So forbid beats everything, an escalation beats a plain permit, and nothing is allowed unless
 * a permit says so. Policy 1 is deliberately stricter than Cedar, which merely skips a policy
 * that errors: a skipped forbid must never turn into an allow.
 *
 * Release (`decideRelease`, whether a finished run's result reaches its agent) reads the text's
 * release policies the same way: deny = withhold the result, escalate = hold it for N people to
 * release, allow = hand it over. A text with no release policy at all releases every result
 * (`airlock/no-release-policy`): that is how Airlock behaved before release policies existed, so
 * publishing an older text changes nothing. Once a text has one, the rules above hold, default
 * deny included: a result no release permit matches is withheld.
 *
 * Guarantees: `decide` and `decideRelease` are pure (no I/O, no clock) and never throw; every
 * decision carries at least one reason with the deciding policy's id, @reason and source text.
 * Being pure, a decision is remembered (the last DECISIONS_KEPT) by what decides it: the prepared
 * set, whose id is the digest of its text, and the request's canonical JSON. Requests of
 * different scripts with the same facts (tools, effect, findings, data classes, limits) are the
 * same request. Each caller gets its own copy. A failed evaluation (a set not loaded into Cedar, a
 * request it rejects) is never remembered: it is decided again, and denied again, every time.
 */
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { canonicalJson } from "@/lib/canonical-json";
import type { PolicyInfo, PreparedActionSet, PreparedPolicySet, ReviewerRole } from "@/lib/policy/policy-set";
import { RELEASE_SCHEMA_NAME, SCHEMA_NAME, type PolicyRequest } from "@/lib/policy/request";

export type PolicyReason = {
  policyId: string;
  /** The policy's @reason, or what went wrong for built-in reasons. */
  text: string;
  /** The policy's Cedar text; empty for Airlock's built-in reasons. */
  source: string;
};

export type PolicyDecision = {
  decision: "allow" | "escalate" | "deny";
  /** 0 unless the decision is escalate. */
  approvalsRequired: number;
  /** Set when the decision is escalate. */
  reviewerRole?: ReviewerRole;
  /** The largest @maxWritesPerTool among the permits that decided (allow or escalate). */
  maxWritesPerTool?: number;
  reasons: PolicyReason[];
};

/** Ids of Airlock's built-in reasons; policy ids cannot contain "/" so they cannot collide. */
export const BUILTIN_REASONS = {
  defaultDeny: "airlock/default-deny",
  evaluationError: "airlock/evaluation-error",
  noReleasePolicy: "airlock/no-release-policy",
} as const;

const deny = (reasons: PolicyReason[]): PolicyDecision => ({ decision: "deny", approvalsRequired: 0, reasons });

const reasonOf = (policy: PolicyInfo): PolicyReason => ({ policyId: policy.id, text: policy.reason, source: policy.source });

/** How a denial is said: of a run, or of a result's release. */
type Words = { denied: string; noPermit: string };
const RUN_WORDS: Words = { denied: "the run is denied", noPermit: "No policy permits this run, so it is denied by default." };
const RELEASE_WORDS: Words = {
  denied: "the result is withheld",
  noPermit: "No release policy permits handing this result over, so it is withheld by default.",
};

/** Decides a run on its Proposal with the text's run policies. */
export function decide(request: PolicyRequest, prepared: PreparedPolicySet): PolicyDecision {
  return evaluate(request, prepared, SCHEMA_NAME, RUN_WORDS);
}

/** Decides whether a finished run's result reaches its agent, with the text's release policies. */
export function decideRelease(request: PolicyRequest, prepared: PreparedPolicySet): PolicyDecision {
  if (prepared.release === null) {
    return {
      decision: "allow",
      approvalsRequired: 0,
      reasons: [
        { policyId: BUILTIN_REASONS.noReleasePolicy, text: "The published policy has no release policy, so results reach the agent as they are.", source: "" },
      ],
    };
  }
  return evaluate(request, prepared.release, RELEASE_SCHEMA_NAME, RELEASE_WORDS);
}

/** How many decisions are remembered, oldest forgotten first. */
const DECISIONS_KEPT = 1_000;
const decisions = new Map<string, PolicyDecision>();

function evaluate(request: PolicyRequest, prepared: PreparedActionSet, schemaName: string, words: Words): PolicyDecision {
  let key: string;
  try {
    key = `${prepared.id}\n${schemaName}\n${canonicalJson(request)}`;
  } catch {
    // A request with no canonical form (it never comes from buildPolicyRequest) is decided, not remembered.
    return evaluateNow(request, prepared, schemaName, words);
  }
  const kept = decisions.get(key);
  if (kept) {
    // Most recently used last, so the oldest is the first forgotten.
    decisions.delete(key);
    decisions.set(key, kept);
    return structuredClone(kept);
  }
  const decided = evaluateNow(request, prepared, schemaName, words);
  if (decided.reasons.some((reason) => reason.policyId === BUILTIN_REASONS.evaluationError)) return decided;
  decisions.set(key, decided);
  if (decisions.size > DECISIONS_KEPT) decisions.delete(decisions.keys().next().value!);
  return structuredClone(decided);
}

function evaluateNow(request: PolicyRequest, prepared: PreparedActionSet, schemaName: string, words: Words): PolicyDecision {
  const evaluationError = (message: string): PolicyDecision =>
    deny([{ policyId: BUILTIN_REASONS.evaluationError, text: `Policy evaluation failed, so ${words.denied}: ${message}`, source: "" }]);
  let answer: cedar.AuthorizationAnswer;
  try {
    answer = cedar.statefulIsAuthorized({
      principal: request.principal,
      action: request.action,
      resource: request.resource,
      context: request.context,
      entities: request.entities,
      preparsedPolicySetId: prepared.id,
      preparsedSchemaName: schemaName,
      validateRequest: true,
    });
  } catch (error) {
    return evaluationError(error instanceof Error ? error.message : String(error));
  }
  if (answer.type === "failure") {
    return evaluationError(answer.errors.map((e) => e.message).join("; ") || "unknown error");
  }

  const { decision, diagnostics } = answer.response;
  if (diagnostics.errors.length > 0) {
    return deny(
      diagnostics.errors.map(({ policyId, error }) => ({
        policyId,
        text: `Policy "${policyId}" could not be evaluated (${error.message}), so ${words.denied}.`,
        source: prepared.policies.get(policyId)?.source ?? "",
      })),
    );
  }

  const determining: PolicyInfo[] = [];
  for (const policy of prepared.policies.values()) {
    if (diagnostics.reason.includes(policy.id)) determining.push(policy);
  }
  if (determining.length !== diagnostics.reason.length) {
    return evaluationError(`Cedar named policies this set does not contain: ${diagnostics.reason.join(", ")}`);
  }

  if (decision === "deny") {
    if (determining.length > 0) return deny(determining.map(reasonOf));
    return deny([
      {
        policyId: BUILTIN_REASONS.defaultDeny,
        text: words.noPermit,
        source: "",
      },
    ]);
  }

  const writeCaps = determining.flatMap((policy) => (policy.maxWritesPerTool === undefined ? [] : [policy.maxWritesPerTool]));
  const raised = writeCaps.length > 0 ? { maxWritesPerTool: Math.max(...writeCaps) } : {};
  const escalations = determining.filter((policy) => policy.approvals > 0);
  if (escalations.length > 0) {
    const strictest = escalations.reduce((a, b) => (b.approvals > a.approvals ? b : a));
    return {
      decision: "escalate",
      approvalsRequired: strictest.approvals,
      reviewerRole: strictest.role ?? "reviewer",
      ...raised,
      reasons: escalations.map(reasonOf),
    };
  }
  return { decision: "allow", approvalsRequired: 0, ...raised, reasons: determining.map(reasonOf) };
}
