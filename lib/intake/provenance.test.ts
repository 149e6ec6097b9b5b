/**
 * Provenance at intake, on real parts (PostgreSQL, the demo ledger over stdio, analysis, the
 * shipped policies): the prompt and the selected context are capped in UTF-8 bytes and an
 * oversize one is refused naming the field; what was given is stored, sealed in run.submitted
 * (model, conversation id, each text's sha256 and size) and offered to policy as presence flags;
 * the shipped policy adds "Provenance missing" to a regulated run without a model or a prompt;
 * and the opt-in deny of docs/policies.md, proposed by one admin and approved by another, denies it.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { approvePolicyVersion, proposePolicyText, publishPolicyText } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { PROVENANCE_BYTE_CAPS, submitRun } from "./submit";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;
const deps = () => ({ ...runtime, startExecution: () => {}, startPreview: () => {} });
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** Reads customers (pii): escalates to two reviewers under the shipped policies. */
const PII_READ = "const page = await tools.ledger.listCustomers({ limit: 2 });\nreturn page.customers.length;";

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await createUser(tx, system, { email: "second@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "provenance", ownerEmail: "owner@example.com" }));
  const { ownerId } = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  agent = { type: "agent", id: created.agentId, name: "provenance", ownerId, scopes: created.scopes };
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  runtime = await createRuntime(
    db.prisma,
    { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } },
    { databaseUrl: db.url, execute: false },
  );
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("provenance caps", () => {
  it.each([
    ["prompt", PROVENANCE_BYTE_CAPS.prompt],
    ["context", PROVENANCE_BYTE_CAPS.context],
  ] as const)("%s: the byte cap is accepted; one byte more is refused naming the field, counted in UTF-8 bytes (not characters)", async (field, cap) => {
    expect(cap).toBe(field === "prompt" ? 32 * 1024 : 64 * 1024);
    const atCap = await submitRun(deps(), agent, { code: "return 1;", purpose: `${field} at cap`, provenance: { [field]: "a".repeat(cap) } });
    expect(atCap.status).toBe("queued");
    // "é" is 2 bytes: far fewer characters than the cap, one byte over it.
    const over = "é".repeat(cap / 2) + "a";
    expect(over.length).toBeLessThan(cap);
    const refusal = submitRun(deps(), agent, { code: "return 2;", purpose: `${field} over cap`, provenance: { [field]: over } });
    await expect(refusal).rejects.toMatchObject({
      code: "bad_request",
      message: `provenance.${field}: ${cap + 1} bytes; the limit is ${cap} bytes (${cap / 1024} KiB) in UTF-8.`,
      details: { field: `provenance.${field}`, bytes: cap + 1, limit: cap },
    });
    const refused = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.refused", subjectId: agent.id }, orderBy: { id: "desc" } });
    expect(refused.data).toMatchObject({ reason: "bad_request", message: expect.stringContaining(`provenance.${field}`) });
    expect(await db.prisma.run.count({ where: { purpose: `${field} over cap` } })).toBe(0);
    await expect(
      submitRun(deps(), agent, { code: "return 3;", purpose: "too many characters", provenance: { [field]: "a".repeat(cap + 1) } }),
    ).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringMatching(new RegExp(`^provenance\\.${field}: `)),
    });
    await expect(submitRun(deps(), agent, { code: "return 4;", purpose: "NUL", provenance: { [field]: "a\u0000b" } })).rejects.toMatchObject({
      details: { field: `provenance.${field}`, character: "U+0000" },
    });
  });

  it("refuses provenance fields it does not know", async () => {
    await expect(submitRun(deps(), agent, { code: "return 5;", purpose: "extra", provenance: { temperature: "0.2" } })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("provenance"),
    });
  });
});

describe("provenance sealed and offered to policy", () => {
  it("a pii run without a model or a prompt: escalates with 'Provenance missing'; the request says what was given", async () => {
    const view = await submitRun(deps(), agent, { code: PII_READ, purpose: "count customers", provenance: { model: "claude-x" } });
    expect(view).toMatchObject({ status: "pending_review", decision: "escalate", approvalsRequired: 2 });
    expect(view.reasons.map((r) => r.policyId)).toEqual(["review-regulated-data", "review-provenance-missing"]);
    expect(view.reasons[1]!.text).toMatch(/^Provenance missing: /);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect((run.policyRequest as { context: unknown }).context).toEqual({
      provenance: { hasModel: true, hasPrompt: false, hasConversation: false, hasContext: false },
    });
  });

  it("a pii run with model, prompt, conversation and context: no such reason; stored as given and sealed field by field in run.submitted", async () => {
    const provenance = {
      model: "claude-x",
      conversationId: "conv-7",
      prompt: "How many customers do we have? ünïcode",
      context: "customer table schema\nid,name",
    };
    const view = await submitRun(deps(), agent, { code: `${PII_READ}\n// full`, purpose: "count customers", provenance });
    expect(view).toMatchObject({ status: "pending_review", decision: "escalate" });
    expect(view.reasons.map((r) => r.policyId)).toEqual(["review-regulated-data"]);
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(run.provenance).toEqual(provenance);
    const submitted = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.submitted", subjectId: view.runId } });
    expect((submitted.data as { provenance: unknown }).provenance).toEqual({
      model: "claude-x",
      conversationId: "conv-7",
      prompt: { sha256: sha256(provenance.prompt), bytes: Buffer.byteLength(provenance.prompt, "utf8") },
      context: { sha256: sha256(provenance.context), bytes: Buffer.byteLength(provenance.context, "utf8") },
    });
    expect((submitted.data as { contentDigests: Record<string, string> }).contentDigests.provenance).toMatch(/^[0-9a-f]{64}$/);
    expect(submitted.data).not.toHaveProperty("via");
  });

  it("the opt-in deny of docs/policies.md, proposed and approved by two admins, denies a pii run without a prompt and only that", async () => {
    const doc = readFileSync(new URL("../../docs/policies.md", import.meta.url), "utf8");
    const rule = /```cedar\n([\s\S]*?)```/.exec(doc)![1]!;
    expect(rule).toContain('@id("deny-regulated-without-provenance")');
    const [first, second] = await Promise.all(
      ["owner@example.com", "second@example.com"].map(async (email): Promise<Actor> => {
        const user = await db.prisma.user.findUniqueOrThrow({ where: { email } });
        return { type: "user", id: user.id, email, role: user.role };
      }),
    );
    const proposed = await db.prisma.$transaction((tx) => proposePolicyText(tx, first!, `${defaultPolicyText()}\n${rule}`));
    await db.prisma.$transaction((tx) => approvePolicyVersion(tx, second!, proposed.version));

    const denied = await submitRun(deps(), agent, { code: `${PII_READ}\n// strict`, purpose: "count customers", provenance: { model: "claude-x" } });
    expect(denied).toMatchObject({ status: "denied", decision: "deny", error: { code: "POLICY_DENIED" } });
    expect(denied.reasons.map((r) => r.policyId)).toEqual(["deny-regulated-without-provenance"]);
    expect(denied.error!.message).toContain("Provenance missing");
    const given = await submitRun(deps(), agent, {
      code: `${PII_READ}\n// strict, given`,
      purpose: "count customers",
      provenance: { model: "claude-x", prompt: "count them" },
    });
    expect(given).toMatchObject({ status: "pending_review", decision: "escalate" });
    const plain = await submitRun(deps(), agent, { code: "return 42;", purpose: "no data" });
    expect(plain.status).toBe("queued");
  });
});
