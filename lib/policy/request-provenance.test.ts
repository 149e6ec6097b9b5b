/**
 * `context.provenance` in the Cedar request (schema version 3) and the shipped rule that reads it:
 * a run on regulated data that lacks a model or a prompt gets the reason "Provenance missing" and
 * escalates exactly as it did before the rule; the opt-in deny printed in docs/policies.md
 * validates and denies such runs; and a request stored at version 2 (context `{}`) still replays,
 * as if no provenance had been given.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ScriptFacts } from "@/lib/contracts/analysis";
import { decide } from "@/lib/policy/decide";
import { defaultPolicyText, preparePolicySet, validatePolicyText } from "@/lib/policy/policy-set";
import {
  buildPolicyRequest,
  POLICY_REQUEST_VERSION,
  provenancePresence,
  upgradePolicyRequest,
  type PolicyRequest,
  type PolicyRequestInput,
} from "@/lib/policy/request";

const defaults = preparePolicySet(defaultPolicyText());
const RULE = /@id\("review-provenance-missing"\)[\s\S]*?\n};\n/;
const withoutRule = preparePolicySet(defaultPolicyText().replace(RULE, ""));

/** The opt-in deny exactly as docs/policies.md prints it. */
function documentedDenyRule(): string {
  const doc = readFileSync(new URL("../../docs/policies.md", import.meta.url), "utf8");
  const block = /```cedar\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block?.includes("deny-regulated-without-provenance")) throw new Error("docs/policies.md has no opt-in deny rule");
  return block;
}

const READ_ONLY: ScriptFacts = {
  effect: "read_only",
  openWorld: false,
  dataClasses: ["internal"],
  toolCount: 1,
  readOnlyDataClasses: ["internal"],
  checks: [],
};
const FULL = provenancePresence({ model: "m", prompt: "p", conversationId: "c", context: "x" });

function request(overrides: Partial<PolicyRequestInput> = {}): PolicyRequest {
  return buildPolicyRequest({
    agent: { id: "agent-1", ownerId: "user-1" },
    facts: READ_ONLY,
    findings: [],
    capabilitySet: ["ledger.listCustomers"],
    inputDataClasses: [],
    limits: { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 100 },
    isolation: "strict",
    ...overrides,
  });
}

const ids = (decision: ReturnType<typeof decide>) => decision.reasons.map((r) => r.policyId);
const PII = { facts: { ...READ_ONLY, dataClasses: ["pii" as const] } };

describe("provenance in the policy request", () => {
  it("flags what was given, a blank string counting as absent, and never carries the text", () => {
    expect(provenancePresence({ model: "claude", prompt: "  ", context: "rows 1-3" })).toEqual({
      hasModel: true,
      hasPrompt: false,
      hasConversation: false,
      hasContext: true,
    });
    const built = request({ provenance: provenancePresence({ model: "secret-model-name", prompt: "secret prompt" }) });
    expect(built.context).toEqual({ provenance: { hasModel: true, hasPrompt: true, hasConversation: false, hasContext: false } });
    expect(JSON.stringify(built)).not.toContain("secret");
  });

  it.each([
    ["nothing", {}],
    ["a model only", { model: "m" }],
    ["a prompt only", { prompt: "p" }],
    ["a conversation and context but no model or prompt", { conversationId: "c", context: "x" }],
  ])("a pii run with %s gets the 'Provenance missing' reason and escalates as before", (_label, given) => {
    const decision = decide(request({ ...PII, provenance: provenancePresence(given) }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2, reviewerRole: "reviewer" });
    expect(ids(decision)).toEqual(["review-regulated-data", "review-provenance-missing"]);
    expect(decision.reasons[1]!.text).toMatch(/^Provenance missing: /);
    const before = decide(request({ ...PII, provenance: provenancePresence(given) }), withoutRule);
    expect({ decision: decision.decision, approvals: decision.approvalsRequired }).toEqual({ decision: before.decision, approvals: before.approvalsRequired });
  });

  it("no reason when the model and the prompt are given, nor on unregulated data", () => {
    expect(ids(decide(request({ ...PII, provenance: provenancePresence({ model: "m", prompt: "p" }) }), defaults))).toEqual(["review-regulated-data"]);
    expect(ids(decide(request(), defaults))).toEqual(["allow-read-only-unregulated"]);
    expect(ids(decide(request({ facts: { ...READ_ONLY, effect: "write" } }), defaults))).toEqual(["review-writes"]);
    for (const dataClass of ["financial", "phi"] as const) {
      expect(ids(decide(request({ inputDataClasses: [dataClass] }), defaults))).toContain("review-provenance-missing");
      expect(ids(decide(request({ inputDataClasses: [dataClass], provenance: FULL }), defaults))).not.toContain("review-provenance-missing");
    }
  });

  it("the opt-in deny in docs/policies.md validates and denies regulated runs without a model or a prompt, and only those", () => {
    const text = `${defaultPolicyText()}\n${documentedDenyRule()}`;
    expect(validatePolicyText(text)).toEqual({ ok: true, errors: [], warnings: [] });
    const strict = preparePolicySet(text);
    const denied = decide(request({ ...PII, provenance: provenancePresence({ model: "m" }) }), strict);
    expect(denied).toMatchObject({ decision: "deny", approvalsRequired: 0 });
    expect(ids(denied)).toEqual(["deny-regulated-without-provenance"]);
    expect(denied.reasons[0]!.text).toMatch(/^Provenance missing: /);
    expect(decide(request({ ...PII, provenance: provenancePresence({ model: "m", prompt: "p" }) }), strict)).toMatchObject({ decision: "escalate" });
    expect(decide(request(), strict)).toMatchObject({ decision: "allow" });
  });

  it("replays a request stored at version 2 (context {}) as if no provenance was given; unupgraded, it fails closed", () => {
    expect(POLICY_REQUEST_VERSION).toBeGreaterThanOrEqual(3);
    const current = request(PII);
    const v2: PolicyRequest = { ...current, schemaVersion: 2, context: {} };
    expect(decide(v2, defaults).decision).toBe("deny"); // the schema requires context.provenance
    const upgraded = upgradePolicyRequest(v2);
    expect(upgraded).toMatchObject({
      schemaVersion: POLICY_REQUEST_VERSION,
      context: { provenance: { hasModel: false, hasPrompt: false, hasConversation: false, hasContext: false } },
    });
    expect(decide(upgraded, defaults)).toEqual(decide(current, defaults));
    // A current request keeps what it was decided on.
    const given = request({ ...PII, provenance: FULL });
    expect(upgradePolicyRequest(given)).toBe(given);
  });
});
