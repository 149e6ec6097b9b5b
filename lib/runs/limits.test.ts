/**
 * Run limits from analysis and the deciding permit: per-tool caps for tools that are not
 * read-only, raised by @maxWritesPerTool, and a policy request that can be replayed across
 * schema versions.
 */
import { describe, expect, it } from "vitest";
import { analyzeScript } from "@/lib/intake/analyze";
import type { ToolFacts } from "@/lib/contracts/tools";
import { decide } from "@/lib/policy/decide";
import { preparePolicySet, validatePolicyText } from "@/lib/policy/policy-set";
import { buildPolicyRequest, POLICY_REQUEST_VERSION, upgradePolicyRequest } from "@/lib/policy/request";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import { decideRunLimits, parseRunLimits } from "./limits";

const TOOLS: ToolFacts[] = [
  { server: "ledger", name: "listRefunds", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "internal", quarantined: false },
  {
    server: "ledger",
    name: "issueRefund",
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
    dataClass: "financial",
    quarantined: false,
  },
];

function analyze(code: string) {
  return analyzeScript({ code, language: "javascript", tools: TOOLS, declarations: "declare const tools: any;", allowedPackages: [] });
}

const refund = (n: number) => `await tools.ledger.issueRefund({ invoiceId: "i", amountMinor: 1, reason: "r${n}", idempotencyKey: "k${n}" });`;

describe("per-tool caps", () => {
  it("counts straight-line call sites of tools that are not read-only; read-only tools have no cap of their own", () => {
    const analysis = analyze(`${refund(1)}\n${refund(2)}\nawait tools.ledger.listRefunds({});`);
    expect(decideRunLimits(analysis.callSites, undefined)).toEqual({ ...RUN_LIMIT_DEFAULTS, writeCaps: { "ledger.issueRefund": 2 } });
    expect(analysis.findings.map((f) => f.code)).not.toContain("unbounded_loop");
  });

  it.each([
    ["a loop", `for (const k of ["a", "b"]) ${refund(1)}`],
    ["a callback", `await Promise.all([1, 2].map(async () => { ${refund(1)} }));`],
    ["a recursive function", `async function again(n) { if (n > 0) { ${refund(1)} await again(n - 1); } } await again(3);`],
    ["a tool taken as a value", `const f = tools.ledger.issueRefund; await f({}); await f({});`],
    ["a tagged template", "await tools.ledger.issueRefund`x`;"],
  ])("a call site in %s makes the cap maxToolCalls and raises unbounded_loop", (_, code) => {
    const analysis = analyze(code);
    expect(decideRunLimits(analysis.callSites, undefined).writeCaps).toEqual({ "ledger.issueRefund": RUN_LIMIT_DEFAULTS.maxToolCalls });
    expect(analysis.findings).toContainEqual(expect.objectContaining({ code: "unbounded_loop" }));
  });

  it("@maxWritesPerTool on the deciding permit raises the cap, never above maxToolCalls", () => {
    const text = `@id("refunds-in-bulk")
@reason("Bulk refunds are reviewed by two people.")
@approvals("2")
@maxWritesPerTool("25")
permit (principal, action == Action::"run", resource) when { resource.tools.contains("ledger.issueRefund") };`;
    const analysis = analyze(refund(1));
    const decision = decide(
      buildPolicyRequest({
        agent: { id: "a", ownerId: "u" },
        facts: analysis.facts,
        findings: analysis.findings,
        capabilitySet: analysis.capabilitySet,
        inputDataClasses: [],
        limits: RUN_LIMIT_DEFAULTS,
        isolation: "strict",
      }),
      preparePolicySet(text),
    );
    expect(decision).toMatchObject({ decision: "escalate", maxWritesPerTool: 25 });
    expect(decideRunLimits(analysis.callSites, decision.maxWritesPerTool).writeCaps).toEqual({ "ledger.issueRefund": 25 });
    expect(decideRunLimits(analysis.callSites, 5_000).writeCaps).toEqual({ "ledger.issueRefund": RUN_LIMIT_DEFAULTS.maxToolCalls });
  });

  it("refuses a malformed @maxWritesPerTool, or one on a forbid", () => {
    const bad = (annotation: string, effect = "permit") =>
      validatePolicyText(`@id("p")\n@reason("r")\n${annotation}\n${effect} (principal, action == Action::"run", resource);`).errors.map((e) => e.message);
    expect(bad(`@maxWritesPerTool("0")`)).toEqual([expect.stringContaining("@maxWritesPerTool must be a whole number")]);
    expect(bad(`@maxWritesPerTool("many")`)).toEqual([expect.stringContaining("@maxWritesPerTool must be a whole number")]);
    expect(bad(`@maxWritesPerTool("3")`, "forbid")).toEqual([expect.stringContaining("only makes sense on a permit")]);
  });

  it("reads stored limits strictly, naming the run and the column when they are malformed", () => {
    const run = (limits: unknown) => ({ id: "run-1", limits });
    expect(parseRunLimits(run(null))).toBeNull();
    expect(parseRunLimits(run({ ...RUN_LIMIT_DEFAULTS, writeCaps: { "a.b": 2 } }))).toEqual({ ...RUN_LIMIT_DEFAULTS, writeCaps: { "a.b": 2 } });
    expect(() => parseRunLimits(run({ ...RUN_LIMIT_DEFAULTS, writeCaps: { "a.b": 0 } }))).toThrow(/Run run-1: the stored limits is malformed \(writeCaps.a.b/);
    expect(() => parseRunLimits(run({ ...RUN_LIMIT_DEFAULTS, writeCaps: {}, extra: 1 }))).toThrow(
      expect.objectContaining({ code: "stored_data_invalid", details: { runId: "run-1", column: "limits" } }),
    );
  });
});

describe("policy request versions", () => {
  it("stamps the version and replays a stored request from before versioning unchanged in meaning", () => {
    const built = buildPolicyRequest({
      agent: { id: "a", ownerId: "u" },
      facts: analyze("return 1;").facts,
      findings: [],
      capabilitySet: [],
      inputDataClasses: [],
      limits: RUN_LIMIT_DEFAULTS,
      isolation: "strict",
    });
    expect(built.schemaVersion).toBe(POLICY_REQUEST_VERSION);
    const { schemaVersion: _dropped, ...legacy } = built;
    const policies = preparePolicySet(
      `@id("all")\n@reason("r")\npermit (principal, action == Action::"run", resource) when { resource.limits.maxToolCalls <= 1000 };`,
    );
    expect(decide(upgradePolicyRequest(legacy), policies)).toEqual(decide(built, policies));
    expect(decide(upgradePolicyRequest(legacy), policies).decision).toBe("allow");
  });
});
