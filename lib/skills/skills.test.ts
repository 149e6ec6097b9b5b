/**
 * Skills on real parts (PostgreSQL, the demo ledger over stdio, a strict sandbox): three reviewed
 * refunds with other literals are promoted to a skill whose replay tests pass against their
 * recorded calls; two reviewers publish it; run_skill calls inside a standing approval's bounds
 * run without review, exactly up to its budget even when they race; calls outside it, after its
 * revocation, and scripts that inline the skill escalate as policy says. Every refusal is typed.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { runCli } from "@/lib/cli/main";
import { setEnvForChildren } from "@/lib/env";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { analyzeAgainst } from "@/lib/intake/analyze";
import { submitRun } from "@/lib/intake/submit";
import { submitSkillRun } from "@/lib/intake/skill";
import { listPatterns } from "@/lib/review/patterns";
import { getRun } from "@/lib/runs/service";
import { createSandboxPool, type SandboxPool } from "@/lib/sandbox";
import { fingerprintScript } from "@/lib/script-fingerprint";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { reviewedToEnd } from "@/lib/testing/review";
import { replaySkillTests } from "./replay";
import { draftSkill, getSkillVersion, proposeSkill, reviewSkillVersion } from "./service";
import { claimStandingApproval, confirmStandingApproval, listStandingApprovals, proposeStandingApproval, revokeStandingApproval } from "./standing";

type User = Extract<Actor, { type: "user" }>;
let ledger: LedgerRuntime;
let pool: SandboxPool;
let admin: User, admin2: User, rita: User, rafael: User;

const refund = (invoiceId: string, amountMinor: number, key: string) =>
  `const answer = await tools.ledger.issueRefund({ invoiceId: "${invoiceId}", amountMinor: ${amountMinor}, currency: "EUR", reason: "goodwill credit", idempotencyKey: "${key}" });
return { refundId: answer.refund.id, amountMinor: answer.refund.amountMinor, replayed: answer.replayed };`;

const reviewed = (runId: string) => reviewedToEnd(ledger, [rita, rafael], runId);

const settled = (runId: string) => getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 30 });

beforeAll(async () => {
  ledger = await startLedgerRuntime("skills-bot");
  pool = createSandboxPool({ size: 1, isolation: "strict" });
  const system: Actor = { type: "system", name: "test" };
  const made = await ledger.db.prisma.$transaction(async (tx) => {
    const users = [];
    for (const [email, role] of [
      ["ada@example.com", "admin"],
      ["alan@example.com", "admin"],
      ["rita@example.com", "reviewer"],
      ["rafael@example.com", "reviewer"],
    ] as const) {
      await createUser(tx, system, { email, role });
      const { id } = await tx.user.findUniqueOrThrow({ where: { email } });
      users.push({ type: "user", id, email, role } as User);
    }
    return users;
  });
  [admin, admin2, rita, rafael] = made as [User, User, User, User];
  for (const [invoice, amount, key] of [
    ["inv_0001", 1200, "skills-test-0001"],
    ["inv_0002", 2500, "skills-test-0002"],
    ["inv_0020", 4100, "skills-test-0003"],
  ] as const) {
    const view = await submitRun(ledger.runtime, ledger.agent, { code: refund(invoice, amount, key), purpose: "Goodwill refund", language: "javascript" });
    expect((await reviewed(view.runId)).status).toBe("succeeded");
  }
  // One more run of the pattern fails (an open invoice cannot be refunded): it is no test.
  const failing = await submitRun(ledger.runtime, ledger.agent, {
    code: refund("inv_0012", 100, "skills-test-0004"),
    purpose: "Goodwill refund",
    language: "javascript",
  });
  expect((await reviewed(failing.runId)).status).toBe("failed");
}, 240_000);

afterAll(async () => {
  await pool?.close();
  await ledger?.close();
});

const fingerprint = () => fingerprintScript(refund("inv_0001", 1200, "skills-test-0001"), "javascript", ["ledger.issueRefund"]).fingerprint;
const deps = () => ({
  db: ledger.db.prisma,
  runScript: (request: Parameters<SandboxPool["run"]>[0]) => pool.run(request),
  analyze: (code: string, language: "typescript" | "javascript") => analyzeAgainst(ledger.runtime.registry, code, language).findings,
});
let versionId = "";

describe("promoting a pattern to a skill", () => {
  it("proposes the code with the varying literals bound, the schemas and the replay tests", async () => {
    const { patterns } = await listPatterns(ledger.db.prisma, admin);
    expect(patterns.find((p) => p.fingerprint === fingerprint())).toMatchObject({ count: 4, successRate: 0.75 });

    const proposal = await proposeSkill(ledger.db.prisma, admin, fingerprint());
    expect(proposal.inputs.map((i) => [i.name, i.type])).toEqual([
      ["invoiceId", "string"],
      ["amountMinor", "integer"],
      ["idempotencyKey", "string"],
    ]);
    expect(proposal.code).toContain('invoiceId: args.invoiceId, amountMinor: args.amountMinor, currency: "EUR"');
    expect(proposal.code.startsWith("async (args) => {")).toBe(true);
    expect(proposal.inputSchema).toMatchObject({ additionalProperties: false, required: ["invoiceId", "amountMinor", "idempotencyKey"] });
    // An argument carries what the tool it is passed to requires of it, so run_skill refuses what the tool would.
    expect(proposal.inputSchema.properties).toMatchObject({
      amountMinor: { type: "integer", exclusiveMinimum: 0 },
      idempotencyKey: { type: "string", minLength: 8, maxLength: 100 },
    });
    expect(proposal.outputSchema).toMatchObject({ type: "object", required: ["amountMinor", "refundId", "replayed"] });
    expect(proposal.tests).toHaveLength(3);
    expect(proposal.skipped).toEqual({ not_succeeded: 1 });
    expect(proposal.tests[0]!.calls).toHaveLength(1);
    expect(proposal.description).toBe("Goodwill refund");
  });

  it("refuses bad drafts with the field named", async () => {
    const base = { fingerprint: fingerprint(), name: "refundInvoice", description: "Refund part of a paid EUR invoice" };
    await expect(draftSkill(ledger.db.prisma, rita, base)).rejects.toMatchObject({ code: "forbidden" });
    await expect(draftSkill(ledger.db.prisma, admin, { ...base, name: "Refund-Invoice" })).rejects.toMatchObject({
      code: "bad_request",
      details: { field: "name" },
    });
    await expect(draftSkill(ledger.db.prisma, admin, { ...base, inputs: [{ hole: 0, name: "class" }] })).rejects.toMatchObject({ code: "bad_request" });
    // Names every object has: a schema's properties or `args.<name>` would read the prototype's.
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      await expect(draftSkill(ledger.db.prisma, admin, { ...base, inputs: [{ hole: 0, name }] })).rejects.toMatchObject({
        code: "bad_request",
        message: expect.stringContaining(`"${name}" cannot name an argument`),
      });
    }
    await expect(draftSkill(ledger.db.prisma, admin, { ...base, name: "constructor" })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("must not be one every object has"),
    });
    await expect(draftSkill(ledger.db.prisma, admin, { ...base, inputs: [{ hole: 999, name: "x" }] })).rejects.toMatchObject({ code: "bad_request" });
    await expect(
      draftSkill(ledger.db.prisma, admin, { ...base, inputSchema: { type: "object", properties: {}, additionalProperties: false } }),
    ).rejects.toMatchObject({
      code: "bad_request",
      details: { field: "inputSchema" },
    });
    await expect(draftSkill(ledger.db.prisma, admin, { ...base, extra: 1 })).rejects.toMatchObject({ code: "bad_request" });
    await expect(proposeSkill(ledger.db.prisma, admin, "0".repeat(64))).rejects.toMatchObject({ code: "bad_request", details: { field: "fingerprint" } });
  });

  it("is published by two reviewers once its replay tests pass, and never by its drafter or before the tests", async () => {
    const drafted = await draftSkill(ledger.db.prisma, admin, {
      fingerprint: fingerprint(),
      name: "refundInvoice",
      description: "Refund part of a paid EUR invoice",
    });
    expect(drafted).toMatchObject({ name: "refundInvoice", version: 1, tests: 3 });
    versionId = drafted.versionId;
    const version = (await getSkillVersion(ledger.db.prisma, rita, versionId))!;
    const vote = (actor: User, verdict: "approve" | "reject" = "approve", contentDigest = version.contentDigest) =>
      reviewSkillVersion(ledger.db.prisma, actor, { versionId, verdict, contentDigest });

    await expect(vote(rita)).rejects.toMatchObject({ code: "conflict", message: expect.stringContaining("replay tests") });
    const refundsMade = async () => (JSON.parse(await readFile(ledger.stateFile, "utf8")) as { refunds: unknown[] }).refunds.length;
    const before = await refundsMade();
    const report = await replaySkillTests(deps(), admin, versionId);
    expect(report).toMatchObject({ passed: 3, failed: 0, contentDigest: version.contentDigest });
    // Replayed against the recorded calls: the ledger itself refunded nothing more.
    expect(await refundsMade()).toBe(before);

    await expect(reviewSkillVersion(ledger.db.prisma, admin, { versionId, verdict: "approve", contentDigest: version.contentDigest })).rejects.toMatchObject({
      code: "forbidden",
    });
    await expect(vote(rita, "approve", "f".repeat(64))).rejects.toMatchObject({ code: "conflict" });
    expect(await vote(rita)).toMatchObject({ status: "draft", approvals: 1 });
    await expect(vote(rita)).rejects.toMatchObject({ code: "conflict" });
    expect(await vote(rafael)).toMatchObject({ status: "published", approvals: 2 });
    await sequenceAudit(ledger.db.prisma);
    const chained = await ledger.db.prisma.auditEvent.findMany({ where: { subjectId: versionId }, select: { action: true } });
    expect(chained.map((e) => e.action).sort()).toEqual(["skill.drafted", "skill.published", "skill.reviewed", "skill.reviewed", "skill.tested"]);
    // Published content is fixed, in the database itself.
    await expect(ledger.db.prisma.skillVersion.update({ where: { id: versionId }, data: { code: "async () => 1" } })).rejects.toThrow(/cannot change/);
  });

  it("fails replay for a skill whose script analysis refuses (a type error reviewers let through once), so no skill is published that no call could run", async () => {
    const typo = (limit: number) => `const page = await tools.ledger.listInvoices({ status: "paid", limit: ${limit} });
const count: string = page.invoices.length;
return count;`;
    // Escalated for the type error, approved by a reviewer, run and succeeded: a pattern.
    for (const limit of [4, 5]) {
      const submitted = await submitRun(ledger.runtime, ledger.agent, { code: typo(limit), purpose: "count with a typo", language: "typescript" });
      expect(submitted).toMatchObject({ status: "pending_review", approvalsRequired: 1 });
      expect(await reviewedToEnd(ledger, [rita], submitted.runId)).toMatchObject({ status: "succeeded" });
    }
    const shape = fingerprintScript(typo(4), "typescript", ["ledger.listInvoices"]).fingerprint;
    const drafted = await draftSkill(ledger.db.prisma, admin, { fingerprint: shape, name: "typoCount", description: "Counts, with a type error" });
    const report = await replaySkillTests(deps(), admin, drafted.versionId);
    expect(report).toMatchObject({ passed: 0, failed: 2 });
    expect(report.cases[0]!.message).toMatch(/^Analysis refuses the skill's script: line \d+: .*\(type_error\)$/);
  });

  it("fails replay for a script whose result is not what its run recorded, so it cannot be approved", async () => {
    const random = (limit: number) => `const page = await tools.ledger.listInvoices({ status: "paid", limit: ${limit} });
return { rows: page.invoices.length, noise: Math.random() };`;
    for (const limit of [2, 3])
      await settled((await submitRun(ledger.runtime, ledger.agent, { code: random(limit), purpose: "noise", language: "javascript" })).runId);
    const shape = fingerprintScript(random(2), "javascript", ["ledger.listInvoices"]).fingerprint;
    const drafted = await draftSkill(ledger.db.prisma, admin, { fingerprint: shape, name: "noisyCount", description: "Counts, with noise" });
    const report = await replaySkillTests(deps(), admin, drafted.versionId);
    expect(report).toMatchObject({ passed: 0, failed: 2 });
    expect(report.cases[0]!.message).toContain("differs");
    const { contentDigest } = (await getSkillVersion(ledger.db.prisma, rita, drafted.versionId))!;
    await expect(reviewSkillVersion(ledger.db.prisma, rita, { versionId: drafted.versionId, verdict: "approve", contentDigest })).rejects.toMatchObject({
      code: "conflict",
    });
    expect(await reviewSkillVersion(ledger.db.prisma, rita, { versionId: drafted.versionId, verdict: "reject", contentDigest })).toMatchObject({
      status: "rejected",
    });
  });
});

/** A standing approval of refundInvoice v1 for skills-bot, for an hour: proposed by one admin, confirmed by the other. */
async function inForce(bounds: Record<string, unknown>, maxUses: number, reason: string) {
  const proposed = await proposeStandingApproval(ledger.db.prisma, admin, {
    skillVersionId: versionId,
    agents: ["skills-bot"],
    bounds,
    notAfter: new Date(Date.now() + 3_600_000).toISOString(),
    maxUses,
    reason,
  });
  await confirmStandingApproval(ledger.db.prisma, admin2, proposed);
  return proposed;
}

describe("run_skill and standing approvals", () => {
  const call = (invoiceId: string, amountMinor: number, key: string) =>
    submitSkillRun(ledger.runtime, ledger.agent, { name: "refundInvoice", arguments: { invoiceId, amountMinor, idempotencyKey: key } });
  let standingId = "";

  it("validates arguments against the input schema and names the skill that exists", async () => {
    await expect(
      submitSkillRun(ledger.runtime, ledger.agent, {
        name: "refundInvoice",
        arguments: { invoiceId: "inv_0015", amountMinor: "12", idempotencyKey: "skills-bad-01" },
      }),
    ).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("amountMinor"),
    });
    await expect(
      submitSkillRun(ledger.runtime, ledger.agent, {
        name: "refundInvoice",
        arguments: { invoiceId: "inv_0015", amountMinor: 5, idempotencyKey: "k-bad-02", extra: 1 },
      }),
    ).rejects.toMatchObject({
      code: "bad_request",
    });
    // What the tool requires of an argument is checked before anything is stored, saying where the skill's arguments are declared.
    await expect(call("inv_0015", -5, "skills-bad-03")).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(/amountMinor must be > 0/),
      next: expect.stringContaining('search_tools (query "refundInvoice", detail full)'),
    });
    await expect(submitSkillRun(ledger.runtime, ledger.agent, { name: "noisyCount", arguments: {} })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("search_tools"),
    });
    await expect(submitSkillRun(ledger.runtime, ledger.agent, { name: "refundInvoce", arguments: {} })).rejects.toMatchObject({
      code: "bad_request",
      message: 'There is no published skill "refundInvoce"; did you mean refundInvoice? search_tools lists the skills.',
    });
    await expect(submitSkillRun(ledger.runtime, ledger.agent, { name: "refundInvoice", version: 2, arguments: {} })).rejects.toMatchObject({
      code: "bad_request",
      details: { field: "version" },
    });
  });

  it("escalates as policy says while no standing approval covers the call, and records the skill version", async () => {
    const view = await call("inv_0015", 3000, "skills-run-0001");
    expect(["previewing", "pending_review"]).toContain(view.status);
    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(run.skills).toEqual([{ name: "refundInvoice", version: 1, versionId }]);
    expect(run.code).toContain("return await (async (args) => {");
    expect(run.code).toContain('"amountMinor":3000');
  });

  it("needs two admins to create one, and refuses what it cannot check", async () => {
    const proposal = {
      skillVersionId: versionId,
      agents: ["skills-bot"],
      bounds: { type: "object", properties: { amountMinor: { type: "integer", maximum: 5000 } }, required: ["amountMinor"] },
      notAfter: new Date(Date.now() + 3_600_000).toISOString(),
      maxUses: 3,
      reason: "Goodwill refunds up to 50 EUR",
    };
    await expect(proposeStandingApproval(ledger.db.prisma, rita, proposal)).rejects.toMatchObject({ code: "forbidden" });
    await expect(proposeStandingApproval(ledger.db.prisma, admin, { ...proposal, agents: ["nobody"] })).rejects.toMatchObject({ details: { field: "agents" } });
    await expect(
      proposeStandingApproval(ledger.db.prisma, admin, { ...proposal, bounds: { type: "object", properties: { a: { type: "nope" } } } }),
    ).rejects.toMatchObject({ details: { field: "bounds" } });
    await expect(proposeStandingApproval(ledger.db.prisma, admin, { ...proposal, notAfter: new Date(Date.now() - 1000).toISOString() })).rejects.toMatchObject({
      details: { field: "notAfter" },
    });
    standingId = (await proposeStandingApproval(ledger.db.prisma, admin, proposal)).id;

    // Proposed is not in force.
    expect(["previewing", "pending_review"]).toContain((await call("inv_0015", 1000, "skills-run-0002")).status);
    await expect(confirmStandingApproval(ledger.db.prisma, admin, { id: standingId })).rejects.toMatchObject({ code: "forbidden" });
    // The owner of skills-bot (an admin) may not confirm one, as they may not review its runs (asking is theirs: the last test).
    const ownerRow = await ledger.db.prisma.user.findUniqueOrThrow({ where: { email: "owner@example.com" } });
    const owner: User = { type: "user", id: ownerRow.id, email: ownerRow.email, role: "admin" };
    await expect(confirmStandingApproval(ledger.db.prisma, owner, { id: standingId })).rejects.toMatchObject({
      code: "forbidden",
      details: { reason: "own_agent" },
    });
    await confirmStandingApproval(ledger.db.prisma, admin2, { id: standingId });
    await expect(confirmStandingApproval(ledger.db.prisma, admin2, { id: standingId })).rejects.toMatchObject({ code: "conflict" });
  });

  it("runs a call inside the bounds without review, and escalates one outside them", async () => {
    const inside = await call("inv_0015", 2000, "skills-run-0003");
    expect(inside.status).toMatch(/queued|running|succeeded/);
    const done = await settled(inside.runId);
    expect(done.status).toBe("succeeded");
    expect(done.result).toMatchObject({ amountMinor: 2000, replayed: false });
    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: inside.runId }, include: { reviews: true } });
    expect(run).toMatchObject({ standingApprovalId: standingId, decision: "escalate", reviews: [] });

    const outside = await call("inv_0015", 9000, "skills-run-0004");
    expect(["previewing", "pending_review"]).toContain(outside.status);
    expect((await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: outside.runId } })).standingApprovalId).toBeNull();
    const [row] = await listStandingApprovals(ledger.db.prisma, rita);
    expect(row).toMatchObject({ id: standingId, uses: 1, remaining: 2, state: "active", agents: ["skills-bot"], skill: "refundInvoice" });
  });

  it("never covers more calls than its budget, however they race", async () => {
    const views = await Promise.all([0, 1, 2, 3].map((i) => call("inv_0021", 100 + i, `skills-race-000${i}`)));
    const covered = (await ledger.db.prisma.run.findMany({ where: { id: { in: views.map((v) => v.runId) } } })).filter(
      (r) => r.standingApprovalId === standingId,
    );
    expect(covered).toHaveLength(2);
    expect((await ledger.db.prisma.standingApproval.findUniqueOrThrow({ where: { id: standingId } })).uses).toBe(3);
    for (const run of covered) expect((await settled(run.id)).status).toBe("succeeded");
    const [row] = await listStandingApprovals(ledger.db.prisma, admin);
    expect(row).toMatchObject({ uses: 3, remaining: 0, state: "exhausted" });
  });

  it("is used at most maxUses times by transactions racing from any agent", async () => {
    const budgeted = await inForce({ type: "object" }, 3, "race");
    const runs = await ledger.db.prisma.run.findMany({ select: { id: true }, take: 8 });
    const claims = await Promise.all(
      runs.map((run) =>
        ledger.db.prisma.$transaction((tx) => claimStandingApproval(tx, { skillVersionId: versionId, agentId: ledger.agent.id, arguments: {}, runId: run.id })),
      ),
    );
    expect(
      claims
        .filter((c) => c?.id === budgeted.id)
        .map((c) => c!.use)
        .sort(),
    ).toEqual([1, 2, 3]);
    expect((await ledger.db.prisma.standingApproval.findUniqueOrThrow({ where: { id: budgeted.id } })).uses).toBe(3);
    // The database refuses a use past the budget whatever the caller does.
    await expect(ledger.db.prisma.standingApproval.update({ where: { id: budgeted.id }, data: { uses: 4 } })).rejects.toThrow(/uses_check/);
  });

  it("covers only its own agents, and arguments can neither widen the bounds nor change the code", async () => {
    const covering = await inForce({ type: "object", properties: { amountMinor: { maximum: 5000 } } }, 10, "attacks");
    const system: Actor = { type: "system", name: "test" };
    const other = await ledger.db.prisma.$transaction((tx) => createAgent(tx, system, { name: "other-bot", ownerEmail: "owner@example.com" }));
    const { ownerId } = await ledger.db.prisma.agent.findUniqueOrThrow({ where: { id: other.agentId } });
    const otherAgent = { type: "agent", id: other.agentId, name: "other-bot", ownerId, scopes: other.scopes } as const;
    const theirs = await submitSkillRun(ledger.runtime, otherAgent, {
      name: "refundInvoice",
      arguments: { invoiceId: "inv_0041", amountMinor: 10, idempotencyKey: "skills-other-01" },
    });
    expect((await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: theirs.runId } })).standingApprovalId).toBeNull();

    // A __proto__ key could carry a second amountMinor past the bounds: refused outright.
    const proto = JSON.parse('{"invoiceId":"inv_0041","amountMinor":10,"idempotencyKey":"skills-proto-1","__proto__":{"amountMinor":1}}') as Record<
      string,
      unknown
    >;
    await expect(submitSkillRun(ledger.runtime, ledger.agent, { name: "refundInvoice", arguments: proto })).rejects.toMatchObject({ code: "bad_request" });

    // Text that would close the string and call another tool stays text: the run has the structure every run_skill call of this version has.
    const plain = await call("inv_0041", 11, "skills-plain-01");
    const injected = await call(
      'inv_0041", amountMinor: 99999 }); await tools.ledger.updateCustomerEmail({ customerId: "cus_001", email: "x@evil.test" }); ({ a: "',
      12,
      "skills-inject-1",
    );
    const [a, b] = await Promise.all([plain, injected].map((v) => ledger.db.prisma.run.findUniqueOrThrow({ where: { id: v.runId } })));
    expect(b!.capabilitySet).toEqual(["ledger.issueRefund"]);
    expect(b!.fingerprint).toBe(a!.fingerprint);
    await Promise.all([plain, injected].map((v) => settled(v.runId)));
    await revokeStandingApproval(ledger.db.prisma, admin, covering);
  });

  it("stops covering calls the moment it is revoked", async () => {
    const fresh = await inForce({ type: "object", properties: { amountMinor: { maximum: 5000 } } }, 10, "More goodwill");
    const before = await call("inv_0029", 500, "skills-rev-0001");
    expect((await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: before.runId } })).standingApprovalId).toBe(fresh.id);
    await revokeStandingApproval(ledger.db.prisma, admin, fresh);
    const after = await call("inv_0029", 500, "skills-rev-0002");
    expect(["previewing", "pending_review"]).toContain(after.status);
    await expect(revokeStandingApproval(ledger.db.prisma, admin, fresh)).rejects.toMatchObject({ code: "conflict" });
    // Nor can a revoked one be used by a transaction that raced the revocation.
    const claimed = await ledger.db.prisma.$transaction((tx) =>
      claimStandingApproval(tx, { skillVersionId: versionId, agentId: ledger.agent.id, arguments: { amountMinor: 1 }, runId: before.runId }),
    );
    expect(claimed).toBeNull();
    await settled(before.runId);
  });

  it("airlock skills list shows skills and standing approvals; skills revoke ends one at once, as an admin", async () => {
    setEnvForChildren({ DATABASE_URL: ledger.db.url });
    const io = () => {
      const out = { text: "", err: "", stdout: (t: string) => void (out.text += t), stderr: (t: string) => void (out.err += t), readStdin: async () => "" };
      return out;
    };
    const active = await inForce({ type: "object" }, 2, "cli");
    const listed = io();
    expect(await runCli(["skills", "list", "--json"], listed)).toBe(0);
    const json = JSON.parse(listed.text) as { skills: { name: string; versions: { status: string }[] }[]; standingApprovals: { id: string; state: string }[] };
    expect(json.skills.find((s) => s.name === "refundInvoice")?.versions[0]?.status).toBe("published");
    expect(json.standingApprovals.find((a) => a.id === active.id)?.state).toBe("active");

    const byReviewer = io();
    expect(await runCli(["skills", "revoke", "--standing", active.id, "--as", "rita@example.com"], byReviewer)).toBe(1);
    expect(byReviewer.err).toContain("skills:manage");
    expect(await runCli(["skills", "revoke", "--standing", active.id, "--as", "ada@example.com"], io())).toBe(0);
    expect((await listStandingApprovals(ledger.db.prisma, admin)).find((a) => a.id === active.id)?.state).toBe("revoked");
    const again = io();
    expect(await runCli(["skills", "revoke", "--standing", active.id, "--as", "ada@example.com"], again)).toBe(1);
    expect(again.err).toContain("already revoked");
    expect(await runCli(["skills", "revoke", "--as", "ada@example.com"], io())).toBe(2);
    const text = io();
    expect(await runCli(["skills", "list"], text)).toBe(0);
    expect(text.text).toContain(`standing ${active.id}\trefundInvoice v1\trevoked`);
  });

  it("inlines skills.<name>(…) into a script, where policy decides on both and no standing approval applies", async () => {
    const code = `const r = await skills.refundInvoice({ invoiceId: "inv_0039", amountMinor: 100, idempotencyKey: "skills-inline-1" });
return r.refundId;`;
    const view = await submitRun(ledger.runtime, ledger.agent, { code, purpose: "inline", language: "javascript" });
    const run = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(run.skills).toEqual([{ name: "refundInvoice", version: 1, versionId }]);
    expect(run.code).toContain("(async (args) => {");
    expect(run.capabilitySet).toEqual(["ledger.issueRefund"]);
    expect(["previewing", "pending_review"]).toContain(run.status);

    await expect(submitRun(ledger.runtime, ledger.agent, { code: "const s = skills; return 1;", purpose: "x", language: "javascript" })).rejects.toMatchObject({
      code: "bad_request",
      details: { field: "code" },
    });
    await expect(
      submitRun(ledger.runtime, ledger.agent, { code: "return await skills.nope({});", purpose: "x", language: "javascript" }),
    ).rejects.toMatchObject({ code: "bad_request", message: expect.stringContaining("search_tools") });
    // A script's own `skills` is its own.
    expect(
      (
        await settled(
          (await submitRun(ledger.runtime, ledger.agent, { code: "const skills = { a: () => 2 }; return skills.a();", purpose: "own", language: "javascript" }))
            .runId,
        )
      ).result,
    ).toBe(2);
  });
});

describe("an agent's owner and standing approvals", () => {
  it("may ask for one (propose), as they may submit their agent's runs, but never confirm one", async () => {
    const ownerRow = await ledger.db.prisma.user.findUniqueOrThrow({ where: { email: "owner@example.com" } });
    const owner: User = { type: "user", id: ownerRow.id, email: ownerRow.email, role: "admin" };
    const proposal = {
      skillVersionId: versionId,
      agents: ["skills-bot"],
      bounds: { type: "object" },
      notAfter: new Date(Date.now() + 3_600_000).toISOString(),
      maxUses: 1,
      reason: "asked by the owner",
    };
    const asked = await proposeStandingApproval(ledger.db.prisma, owner, proposal);
    await confirmStandingApproval(ledger.db.prisma, admin2, asked);
    await revokeStandingApproval(ledger.db.prisma, admin2, asked);
    const other = await proposeStandingApproval(ledger.db.prisma, admin, { ...proposal, reason: "asked by another admin" });
    await expect(confirmStandingApproval(ledger.db.prisma, owner, other)).rejects.toMatchObject({ code: "forbidden", details: { reason: "own_agent" } });
    await revokeStandingApproval(ledger.db.prisma, admin2, other);
  });
});
