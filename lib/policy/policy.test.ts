/**
 * The policy engine as intake uses it: every rule of the shipped default set, the three-outcome
 * semantics on top of Cedar (forbid > escalation > permit > default deny), fail-closed
 * evaluation, and draft validation with line/column positions.
 */
import { randomUUID } from "node:crypto";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { describe, expect, it } from "vitest";
import { analyzeScript } from "@/lib/intake/analyze";
import type { ScriptFacts } from "@/lib/contracts/analysis";
import type { ToolFacts } from "@/lib/contracts/tools";
import type { Finding } from "@/lib/contracts/analysis";
import { BUILTIN_REASONS, decide, decideRelease } from "@/lib/policy/decide";
import { defaultPolicyText, preparePolicySet, PolicyValidationError, validatePolicyText, type PreparedPolicySet } from "@/lib/policy/policy-set";
import { buildPolicyRequest, buildReleaseRequest, type PolicyRequestInput } from "@/lib/policy/request";

const defaults = preparePolicySet(defaultPolicyText());

const READ_ONLY_PUBLIC: ScriptFacts = {
  effect: "read_only",
  openWorld: false,
  dataClasses: ["public"],
  toolCount: 1,
  readOnlyDataClasses: ["public"],
  checks: [],
};

function request(overrides: Partial<PolicyRequestInput> = {}) {
  return buildPolicyRequest({
    agent: { id: "agent-1", ownerId: "user-1" },
    facts: READ_ONLY_PUBLIC,
    findings: [],
    capabilitySet: ["docs.search"],
    inputDataClasses: [],
    limits: { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 100 },
    isolation: "strict",
    // Provenance given: its own rule is request-provenance.test.ts's subject.
    provenance: { hasModel: true, hasPrompt: true, hasConversation: true, hasContext: true },
    ...overrides,
  });
}

const ids = (decision: ReturnType<typeof decide>) => decision.reasons.map((r) => r.policyId);

const TOOLS: ToolFacts[] = [
  { server: "docs", name: "search", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "public", quarantined: false },
  { server: "ledger", name: "exportAll", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "internal", quarantined: true },
];
const DECLARATIONS = "declare const tools: { docs: { search(args: { query: string }): Promise<string[]> } };";

/** Analysis → request → decision, as intake will run it. */
function decideScript(code: string, allowedPackages: string[] = []) {
  const analysis = analyzeScript({ code, language: "typescript", tools: TOOLS, declarations: DECLARATIONS, allowedPackages });
  return decide(request({ facts: analysis.facts, findings: analysis.findings, capabilitySet: analysis.capabilitySet }), defaults);
}

describe("the default policy set", () => {
  it("denies a tool call whose arguments break the schema or the declared types, and escalates other type errors", () => {
    expect(ids(decideScript("await tools.docs.search({ query: 42 });\nreturn 1;"))).toEqual(["deny-invalid-arguments"]);
    const typo = decideScript('const hits = await tools.docs.search({ query: "x" });\nconst n: number = hits;\nreturn n;');
    expect(typo.decision).toBe("escalate");
    expect(ids(typo)).toContain("review-type-errors");
    expect(decideScript('const hits = await tools.docs.search({ query: "x" });\nreturn hits.length;').decision).toBe("allow");
  });

  it("escalates a read of financial data that declares no sum or rowCount check, with the reason; such a check removes that reason", () => {
    const financialRead: ScriptFacts = { ...READ_ONLY_PUBLIC, dataClasses: ["financial"], readOnlyDataClasses: ["financial"] };
    const unchecked = decide(request({ facts: financialRead }), defaults);
    expect(unchecked.decision).toBe("escalate");
    expect(ids(unchecked)).toContain("review-financial-read-unchecked");
    for (const kind of ["sum", "rowCount"] as const) {
      expect(ids(decide(request({ facts: { ...financialRead, checks: [kind] } }), defaults))).not.toContain("review-financial-read-unchecked");
    }
    // A range or equality check does not prove the rows add up; a write of financial data is not this rule's.
    expect(ids(decide(request({ facts: { ...financialRead, checks: ["range", "equal"] } }), defaults))).toContain("review-financial-read-unchecked");
    expect(ids(decide(request({ facts: { ...financialRead, readOnlyDataClasses: [] } }), defaults))).not.toContain("review-financial-read-unchecked");
  });

  it("validates against the schema without errors or warnings", () => {
    expect(validatePolicyText(defaultPolicyText())).toEqual({ ok: true, errors: [], warnings: [] });
  });

  it("allows a read-only script over public data", () => {
    const decision = decide(request(), defaults);
    expect(decision).toEqual({
      decision: "allow",
      approvalsRequired: 0,
      reasons: [
        {
          policyId: "allow-read-only-unregulated",
          text: "The script only reads, and touches no pii, financial or phi data.",
          source: expect.stringContaining('resource.effect == "read_only"'),
        },
      ],
    });
    expect(decision.reasons[0]!.source).toMatch(/^@id\("allow-read-only-unregulated"\)/);
  });

  it("escalates a write to one reviewer", () => {
    const decision = decide(request({ facts: { ...READ_ONLY_PUBLIC, effect: "write" } }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 1, reviewerRole: "reviewer" });
    expect(ids(decision)).toEqual(["review-writes"]);
  });

  it("escalates a destructive script to two reviewers", () => {
    const decision = decide(request({ facts: { ...READ_ONLY_PUBLIC, effect: "destructive" } }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2, reviewerRole: "reviewer" });
    expect(ids(decision)).toEqual(["review-destructive"]);
  });

  it("escalates a read-only script over a pii input to two reviewers", () => {
    const decision = decide(request({ inputDataClasses: ["pii"] }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
    expect(ids(decision)).toEqual(["review-regulated-data"]);
  });

  it("escalates a read-only script over a financial tool to two reviewers", () => {
    const decision = decide(request({ facts: { ...READ_ONLY_PUBLIC, dataClasses: ["financial"] } }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
  });

  it("escalates open-world reads to two reviewers even though a permit matches", () => {
    const decision = decide(request({ facts: { ...READ_ONLY_PUBLIC, openWorld: true } }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
    expect(ids(decision)).toEqual(["review-open-world"]);
  });

  it("asks for the most approvals any matching escalation wants, and lists each of them", () => {
    const decision = decide(request({ facts: { ...READ_ONLY_PUBLIC, effect: "write", dataClasses: ["phi"] } }), defaults);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
    expect(ids(decision)).toEqual(["review-writes", "review-regulated-data"]);
  });

  it("denies a script with an eval-like construct, naming the policy and its text", () => {
    const decision = decideScript("const hits = await tools.docs.search({ query: 'x' });\nreturn eval('hits');");
    expect(decision.decision).toBe("deny");
    expect(decision.approvalsRequired).toBe(0);
    expect(decision.reasons).toEqual([
      {
        policyId: "deny-critical-findings",
        text: expect.stringContaining("eval-like code"),
        source: expect.stringContaining("resource.criticalFindings > 0"),
      },
    ]);
  });

  it("denies an unknown tool", () => {
    const decision = decideScript("await (tools as any).docs.delete({});");
    expect(decision.decision).toBe("deny");
    expect(ids(decision)).toEqual(["deny-critical-findings", "deny-unknown-tools"]);
  });

  it("denies a quarantined tool", () => {
    const decision = decideScript("await (tools as any).ledger.exportAll({});");
    expect(ids(decision)).toEqual(["deny-critical-findings", "deny-quarantined-tools"]);
  });

  it("denies a disallowed import", () => {
    const decision = decideScript('import cp from "node:child_process";\nreturn cp;');
    expect(decision.decision).toBe("deny");
    expect(ids(decision)).toContain("deny-disallowed-imports");
  });

  it("lets forbid win over every permit", () => {
    const findings: Finding[] = [{ code: "eval_like", severity: "critical", message: "eval", line: 1, column: 1 }];
    const decision = decide(request({ findings, facts: { ...READ_ONLY_PUBLIC, effect: "destructive" } }), defaults);
    expect(decision.decision).toBe("deny");
    expect(ids(decision)).toEqual(["deny-critical-findings"]);
  });

  it("escalates, never allows, a read-only script that hides code behind U+2028 (invisible_character)", () => {
    // The review page would show a one-cent refund inside a comment; JavaScript runs the assignment.
    const trojan = "let amountMinor = 1; // one cent, goodwill\u2028amountMinor = 250000;";
    const decision = decideScript(trojan);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 1, reviewerRole: "reviewer" });
    expect(ids(decision)).toEqual(["review-hidden-code"]);
    expect(decision.reasons[0]!.source).toContain('"invisible_character"');
    // The same script with a plain newline is an ordinary read-only script.
    expect(decideScript(trojan.replace("\u2028", "\n")).decision).toBe("allow");
  });

  it("escalates the finding codes themselves, whatever else the script does", () => {
    const hidden: Finding[] = [{ code: "invisible_character", severity: "warning", message: "U+202E RIGHT-TO-LEFT OVERRIDE", line: 1, column: 5 }];
    expect(decide(request({ findings: hidden }), defaults)).toMatchObject({ decision: "escalate", approvalsRequired: 1 });
    const confusable: Finding[] = [{ code: "confusable_identifier", severity: "warning", message: "identifier mixes scripts", line: 1, column: 5 }];
    expect(ids(decide(request({ findings: confusable }), defaults))).toEqual(["review-hidden-code"]);
    // With a destructive tool the stricter escalation still decides the quorum.
    const both = decide(request({ findings: hidden, facts: { ...READ_ONLY_PUBLIC, effect: "destructive" } }), defaults);
    expect(both).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
    expect(ids(both)).toEqual(["review-destructive", "review-hidden-code"]);
  });

  it("escalates a read-only script with a Cyrillic look-alike in a name (confusable_identifier)", () => {
    const decision = decideScript("const hits = await tools.docs.search({ query: 'x' });\nconst t\u043etal = hits.length;\nreturn t\u043etal;");
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 1 });
    expect(ids(decision)).toEqual(["review-hidden-code"]);
  });
});

describe("decide on other policy sets", () => {
  it("denies by default when no permit matches", () => {
    const narrow = preparePolicySet('@id("only-docs") @reason("docs only") permit (principal, action, resource) when { resource.tools == ["docs.search"] };');
    expect(decide(request(), narrow).decision).toBe("allow");
    const decision = decide(request({ capabilitySet: ["ledger.listInvoices"] }), narrow);
    expect(decision).toEqual({
      decision: "deny",
      approvalsRequired: 0,
      reasons: [{ policyId: BUILTIN_REASONS.defaultDeny, text: expect.stringContaining("No policy permits"), source: "" }],
    });
  });

  it("denies when a policy fails at evaluation time, even though a permit matches", () => {
    const overflowing = preparePolicySet(
      [
        '@id("allow-all") @reason("all") permit (principal, action, resource);',
        '@id("overflow") @reason("big limits") forbid (principal, action, resource)',
        "when { resource.limits.timeoutMs * 9223372036854775807 > 0 };",
      ].join("\n"),
    );
    const decision = decide(request(), overflowing);
    expect(decision.decision).toBe("deny");
    expect(decision.reasons).toEqual([
      {
        policyId: "overflow",
        text: expect.stringContaining("could not be evaluated (integer overflow"),
        source: expect.stringContaining("9223372036854775807"),
      },
    ]);
  });

  it("denies when the request does not fit the schema", () => {
    const decision = decide(request({ limits: { timeoutMs: 1.5, cpuSeconds: 60, heapMb: 128, maxToolCalls: 1 } }), defaults);
    expect(decision.decision).toBe("deny");
    expect(ids(decision)).toEqual([BUILTIN_REASONS.evaluationError]);
  });

  it("denies when the policy set was never loaded into Cedar", () => {
    const decision = decide(request(), { ...defaults, id: "never-prepared" });
    expect(decision.decision).toBe("deny");
    expect(decision.reasons[0]!.text).toMatch(/Policy evaluation failed.*never-prepared/);
  });

  it("remembers a decision by the policy text and the whole request, and gives each caller its own copy", () => {
    const docsOnly = preparePolicySet('@id("only-docs") @reason("docs only") permit (principal, action, resource) when { resource.tools == ["docs.search"] };');
    const first = decide(request(), docsOnly);
    expect(first.decision).toBe("allow");
    first.reasons.length = 0;
    first.decision = "deny";
    expect(decide(request(), docsOnly)).toMatchObject({ decision: "allow", reasons: [{ policyId: "only-docs" }] });
    // Another text, the same request: decided by that text.
    const nothing = preparePolicySet('@id("forbid-all") @reason("closed") forbid (principal, action, resource);');
    expect(ids(decide(request(), nothing))).toEqual(["forbid-all"]);
    // The same text, one fact of the request changed: decided anew.
    expect(decide(request({ agent: { id: "agent-1", ownerId: "user-2" }, capabilitySet: ["ledger.listInvoices"] }), docsOnly).decision).toBe("deny");
    expect(decide(request({ facts: { ...READ_ONLY_PUBLIC, effect: "write" } }), defaults).decision).toBe("escalate");
  });

  it("never remembers a failed evaluation: a set loaded into Cedar after a denial decides the next request", () => {
    const id = `late-${randomUUID()}`;
    const source = "permit (principal, action, resource);";
    const late: PreparedPolicySet = {
      id,
      policies: new Map([["allow-all", { id: "allow-all", action: "run", effect: "permit", reason: "all", approvals: 0, source }]]),
      release: null,
    };
    expect(ids(decide(request(), late))).toEqual([BUILTIN_REASONS.evaluationError]);
    expect(cedar.preparsePolicySet(id, { staticPolicies: { "allow-all": source } }).type).toBe("success");
    expect(decide(request(), late)).toMatchObject({ decision: "allow", reasons: [{ policyId: "allow-all" }] });
  });

  it("prepares the same text to the same content-addressed set", () => {
    const again = preparePolicySet(defaultPolicyText());
    expect(again.id).toBe(defaults.id);
    expect([...again.policies.keys()]).toEqual([...defaults.policies.keys()]);
  });
});

describe("validating drafts", () => {
  it("reports a parse error at its line and column", () => {
    const draft = '@id("a") @reason("r")\npermit (principal, action, resource)\nwhen { resource.effect == };';
    const result = validatePolicyText(draft);
    expect(result.ok).toBe(false);
    expect(result.errors).toEqual([expect.objectContaining({ line: 3, column: 27, message: expect.stringContaining("unexpected token") })]);
  });

  it("reports schema errors at the offending expression, after many policies", () => {
    const filler = Array.from({ length: 11 }, (_, i) => `@id("p${i}") @reason("r") permit (principal, action, resource) when { resource.toolCount > ${i} };`);
    const draft = [...filler, "", '@id("typo") @reason("r")', "forbid (principal, action, resource)", 'when { resource.efect == "write" };'].join("\n");
    const result = validatePolicyText(draft);
    expect(result.errors).toEqual([expect.objectContaining({ policyId: "typo", line: 15, column: 8, message: expect.stringContaining("attribute `efect`") })]);
  });

  it("requires @id and @reason, and checks @approvals and @role", () => {
    const draft = [
      "permit (principal, action, resource);",
      '@id("no-reason") permit (principal, action, resource);',
      '@id("f") @reason("r") @approvals("2") forbid (principal, action, resource);',
      '@id("zero") @reason("r") @approvals("0") permit (principal, action, resource);',
      '@id("who") @reason("r") @approvals("1") @role("compliance") permit (principal, action, resource);',
      '@id("f") @reason("r") permit (principal, action, resource);',
    ].join("\n");
    const messages = validatePolicyText(draft).errors.map((e) => [e.line, e.message]);
    expect(messages).toEqual([
      [1, expect.stringContaining("needs @id")],
      [2, expect.stringContaining("needs @reason")],
      [3, expect.stringContaining("only makes sense on a permit")],
      [4, expect.stringContaining("whole number from 1 to 10")],
      [5, expect.stringContaining("@role must be one of reviewer")],
      [6, expect.stringContaining('@id("f") is used by more than one policy')],
    ]);
  });

  it.each([[""], ["   \n "], ["// only a comment\n"]])("refuses a text with no policy (%j): published, it would deny every run", (text) => {
    expect(validatePolicyText(text).errors).toEqual([expect.objectContaining({ line: 1, column: 1, message: expect.stringContaining("holds no policy") })]);
  });

  it("refuses templates", () => {
    const result = validatePolicyText('@id("t") @reason("r") permit (principal == ?principal, action, resource);');
    expect(result.errors).toEqual([expect.objectContaining({ line: 1, column: 1, message: expect.stringContaining("templates") })]);
  });

  it("finds a policy's position even when a comment quotes its text", () => {
    const policy = '@id("a") @reason("r") permit (principal, action, resource) when { resource.nope };';
    const result = validatePolicyText(`// ${policy}\n\n${policy}`);
    expect(result.errors).toEqual([expect.objectContaining({ policyId: "a", line: 3 })]);
  });

  it("makes preparePolicySet throw a typed error carrying the locations", () => {
    let thrown: unknown;
    try {
      preparePolicySet('@id("a") @reason("r")\nforbid (principal, action, resource) when { resource.criticalFindings > "1" };');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PolicyValidationError);
    const error = thrown as PolicyValidationError;
    expect(error.code).toBe("bad_request");
    expect(error.errors).toEqual([expect.objectContaining({ policyId: "a", line: 2, column: 73 })]);
    expect(error.message).toContain("line 2, column 73");
  });
});

describe("policy text that would break the Cedar engine every decision shares", () => {
  const policy = (condition: string) => `@id("deep") @reason("r")\nforbid (principal, action, resource) when { ${condition} };`;
  const chain = (n: number, operator: string, operand: string) => Array.from({ length: n }, () => operand).join(` ${operator} `);
  const engineWorks = () => {
    expect(decide(request(), defaults).decision).toBe("allow");
    expect(validatePolicyText(defaultPolicyText()).ok).toBe(true);
  };

  // Each of these broke the engine (memory access out of bounds) in parsing or in evaluation, until the process restarted.
  it.each([
    ["brackets nested 300 deep", policy(`${"(".repeat(300)}true${")".repeat(300)}`), /nested more than 32 deep/],
    // Cedar ends a comment at a carriage return too: the policy after it on the same line is read.
    [
      "brackets nested 300 deep after a comment ended by a carriage return",
      `// note\r${policy(`${"(".repeat(300)}true${")".repeat(300)}`)}`,
      /nested more than 32 deep/,
    ],
    ["a set nested 150 deep", policy(`${"[".repeat(150)}1${"]".repeat(150)}.contains(1)`), /nested more than 32 deep/],
    ["1,000 nested ifs", policy(`${"if true then ".repeat(1000)}true${" else false".repeat(1000)}`), /more than 1000 operators/],
    ["10,000 chained &&", policy(chain(10_000, "&&", "true")), /more than 1000 operators/],
    ["3,000 chained attribute reads", policy(`context${".a".repeat(3000)} == 1`), /more than 1000 operators/],
    ["400 chained + (parses, and overflowed when evaluated)", policy(`${chain(400, "+", "resource.toolCount")} == 1`), /nests more than 100 operators deep/],
  ])("%s is refused with its place, before Cedar reads it, and the engine keeps deciding", (_what, text, message) => {
    const result = validatePolicyText(text);
    expect(result.ok).toBe(false);
    expect(result.errors[0]).toMatchObject({ line: expect.any(Number), column: expect.any(Number), message: expect.stringMatching(message) });
    expect(() => preparePolicySet(text)).toThrow(PolicyValidationError);
    engineWorks();
  });

  it("the deepest text within the limits is accepted, prepared and evaluated", () => {
    // 32 brackets: the condition's braces and 31 parentheses.
    const deepest = `${"(".repeat(31)}${chain(95, "+", "resource.toolCount")} == 0${")".repeat(31)}`;
    const prepared = preparePolicySet(`${defaultPolicyText()}\n${policy(deepest)}`);
    const decided = decide(request(), prepared);
    expect(ids(decided)).not.toContain(BUILTIN_REASONS.evaluationError);
    expect(decided.decision).toBe("allow");
    engineWorks();
  });
});

describe("release policies", () => {
  const result = (flags: string[], bytes: number, dataClasses: string[]) =>
    buildReleaseRequest({ agent: { id: "agent-1", ownerId: "user-1" }, flags, bytes, dataClasses });

  it("the shipped ones hand a plain result over, and hold instruction-like upstream text and large regulated results for one reviewer", () => {
    expect(decideRelease(result([], 200, ["financial"]), defaults)).toMatchObject({ decision: "allow", reasons: [{ policyId: "release-results" }] });
    expect(decideRelease(result(["upstream_instruction_like"], 200, ["public"]), defaults)).toMatchObject({
      decision: "escalate",
      approvalsRequired: 1,
      reviewerRole: "reviewer",
      reasons: [{ policyId: "hold-upstream-instructions" }],
    });
    expect(decideRelease(result([], 70_000, ["pii"]), defaults)).toMatchObject({
      decision: "escalate",
      reasons: [{ policyId: "hold-large-regulated-results" }],
    });
    expect(decideRelease(result([], 70_000, ["public"]), defaults).decision).toBe("allow");
    expect(decideRelease(result([], 65_536, ["pii"]), defaults).decision).toBe("allow");
  });

  it("a text without release policies hands every result over, saying so; one with them withholds what no release permit matches", () => {
    const runOnly = preparePolicySet('@id("all")\n@reason("Everything runs.")\npermit (principal, action, resource);\n');
    expect(runOnly.release).toBeNull();
    expect(decideRelease(result(["upstream_instruction_like"], 1, []), runOnly)).toMatchObject({
      decision: "allow",
      reasons: [{ policyId: BUILTIN_REASONS.noReleasePolicy }],
    });
    const holdsOnly = preparePolicySet(
      '@id("hold")\n@reason("Held.")\n@approvals("1")\npermit (principal, action == Action::"release", resource) when { resource.bytes > 10 };\n',
    );
    expect(decideRelease(result([], 5, []), holdsOnly)).toMatchObject({
      decision: "deny",
      reasons: [{ policyId: BUILTIN_REASONS.defaultDeny, text: expect.stringContaining("withheld") }],
    });
    const forbids = preparePolicySet(
      '@id("ok")\n@reason("Ok.")\npermit (principal, action == Action::"release", resource);\n@id("never")\n@reason("Never hand over redacted results.")\nforbid (principal, action == Action::"release", resource) when { resource.flags.contains("secret_redacted") };\n',
    );
    expect(decideRelease(result(["secret_redacted"], 5, []), forbids)).toMatchObject({ decision: "deny", reasons: [{ policyId: "never" }] });
  });

  it("release policies do not decide runs, and an unscoped run policy that reads Proposal attributes still validates (no upgrade hazard)", () => {
    const text = `${defaultPolicyText()}\n@id("unscoped-writes")\n@reason("Writes are reviewed.")\n@approvals("1")\npermit (principal, action, resource) when { resource.effect == "write" };\n`;
    expect(validatePolicyText(text)).toMatchObject({ ok: true, errors: [] });
    const prepared = preparePolicySet(text);
    expect([...prepared.policies.keys()]).not.toContain("release-results");
    expect([...prepared.release!.policies.keys()]).toEqual([
      "release-results",
      "hold-upstream-instructions",
      "hold-unreviewed-personal-data",
      "hold-large-regulated-results",
    ]);
    expect(decide(request(), prepared)).toMatchObject({ decision: "allow", reasons: [{ policyId: "allow-read-only-unregulated" }] });
  });

  it("refuses a policy scoped to both actions, @maxWritesPerTool on a release policy, and a release policy reading a Proposal attribute", () => {
    const both = validatePolicyText('@id("both")\n@reason("x")\npermit (principal, action in [Action::"run", Action::"release"], resource);\n');
    expect(both.errors).toEqual([expect.objectContaining({ policyId: "both", line: 1, message: expect.stringContaining("both run and release") })]);
    const caps = validatePolicyText('@id("caps")\n@reason("x")\n@maxWritesPerTool("3")\npermit (principal, action == Action::"release", resource);\n');
    expect(caps.errors).toEqual([expect.objectContaining({ policyId: "caps", message: expect.stringContaining("for run policies") })]);
    const wrong = validatePolicyText(
      '@id("wrong")\n@reason("x")\npermit (principal, action == Action::"release", resource)\nwhen { resource.effect == "write" };\n',
    );
    expect(wrong.ok).toBe(false);
    expect(wrong.errors[0]).toMatchObject({ policyId: "wrong", line: 4 });
  });
});
