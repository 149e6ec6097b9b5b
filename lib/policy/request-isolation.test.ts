/**
 * The `isolation` attribute of the Cedar request (schema version 2) and the shipped rule that reads
 * it: at permission-only, scripts that are not read-only are denied with a reason saying so; reads
 * are decided as before; at strict every decision is what it was before the rule existed; and a
 * request stored at version 1 (no `isolation`) still replays.
 */
import { describe, expect, it } from "vitest";
import type { ScriptFacts } from "@/lib/contracts/analysis";
import { decide } from "@/lib/policy/decide";
import { defaultPolicyText, preparePolicySet } from "@/lib/policy/policy-set";
import { buildPolicyRequest, POLICY_REQUEST_VERSION, upgradePolicyRequest, type PolicyRequest, type PolicyRequestInput } from "@/lib/policy/request";

const defaults = preparePolicySet(defaultPolicyText());
const RULE = /@id\("deny-writes-at-permission-only"\)[\s\S]*?;\n/;
const withoutRule = preparePolicySet(defaultPolicyText().replace(RULE, ""));

const READ_ONLY: ScriptFacts = {
  effect: "read_only",
  openWorld: false,
  dataClasses: ["internal"],
  toolCount: 1,
  readOnlyDataClasses: ["internal"],
  checks: [],
};

function request(overrides: Partial<PolicyRequestInput> = {}): PolicyRequest {
  return buildPolicyRequest({
    agent: { id: "agent-1", ownerId: "user-1" },
    facts: READ_ONLY,
    findings: [],
    capabilitySet: ["ledger.listInvoices"],
    inputDataClasses: [],
    limits: { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 100 },
    isolation: "strict",
    ...overrides,
  });
}

const EFFECTS = ["read_only", "write", "destructive"] as const;
const VARIANTS: Partial<PolicyRequestInput>[] = EFFECTS.flatMap((effect) => [
  { facts: { ...READ_ONLY, effect } },
  { facts: { ...READ_ONLY, effect, openWorld: true } },
  { facts: { ...READ_ONLY, effect, dataClasses: ["pii"] } },
  { facts: { ...READ_ONLY, effect }, findings: [{ code: "eval_like", severity: "critical", message: "eval", line: 1, column: 1 }] },
]);

describe("isolation in the policy request", () => {
  it("the shipped rule is in the default set (the comparisons below would prove nothing otherwise)", () => {
    expect(defaultPolicyText()).toMatch(RULE);
    expect(defaultPolicyText().replace(RULE, "")).not.toContain("deny-writes-at-permission-only");
  });

  it.each(["write", "destructive"] as const)("denies a %s script at permission-only, with a reason naming the level", (effect) => {
    const decision = decide(request({ facts: { ...READ_ONLY, effect }, isolation: "permission-only" }), defaults);
    expect(decision.decision).toBe("deny");
    expect(decision.reasons).toEqual([
      {
        policyId: "deny-writes-at-permission-only",
        text: expect.stringMatching(/permission-only .*only read-only scripts may run/),
        source: expect.stringContaining('resource.isolation == "permission-only"'),
      },
    ]);
  });

  it("decides read-only scripts at permission-only exactly as at strict", () => {
    for (const variant of VARIANTS.filter((v) => v.facts?.effect === "read_only")) {
      expect(decide(request({ ...variant, isolation: "permission-only" }), defaults)).toEqual(decide(request(variant), defaults));
    }
    expect(decide(request({ isolation: "permission-only" }), defaults)).toMatchObject({
      decision: "allow",
      reasons: [{ policyId: "allow-read-only-unregulated" }],
    });
  });

  it("at strict, every decision is the one the set made without the rule", () => {
    for (const variant of VARIANTS) expect(decide(request(variant), defaults)).toEqual(decide(request(variant), withoutRule));
    expect(decide(request({ facts: { ...READ_ONLY, effect: "write" } }), defaults)).toMatchObject({
      decision: "escalate",
      reasons: [{ policyId: "review-writes" }],
    });
  });

  it("replays a request stored at version 1 (no isolation) as strict; unupgraded, it fails closed", () => {
    expect(POLICY_REQUEST_VERSION).toBeGreaterThanOrEqual(2);
    const write = request({ facts: { ...READ_ONLY, effect: "write" } });
    const v1: PolicyRequest = {
      ...write,
      schemaVersion: 1,
      entities: write.entities.map((entity) => {
        if (!("type" in entity.uid) || entity.uid.type !== "Proposal") return entity;
        const { isolation: _dropped, ...attrs } = entity.attrs as Record<string, unknown>;
        return { ...entity, attrs: attrs as typeof entity.attrs };
      }),
    };
    expect(decide(v1, defaults).decision).toBe("deny"); // the schema requires `isolation`
    const upgraded = upgradePolicyRequest(v1);
    expect(upgraded.schemaVersion).toBe(POLICY_REQUEST_VERSION);
    expect(decide(upgraded, defaults)).toEqual(decide(write, defaults));
  });
});
