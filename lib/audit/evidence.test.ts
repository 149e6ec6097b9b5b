/**
 * Run evidence on real parts: a run submitted through intake, previewed, approved by two people,
 * executed in the strict sandbox against the demo ledger, with an outcome recorded by its agent;
 * then the evidence file, checked offline — and changed one value at a time.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { submitRun } from "@/lib/intake/submit";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { decideRun, reviewBinding } from "@/lib/review/service";
import { recordOutcome } from "@/lib/runs/outcome";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import { getRun, type AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { loadSigningKey, type CheckpointConfig } from "./checkpoints";
import type { RunEvidence } from "./evidence-schema";
import { EvidenceFormatError, parseEvidence, verifyRunEvidence } from "./evidence-verify";
import { chainHash } from "./record";
import { checkpointAudited, exportEvidenceAudited } from "./service";
import { append, tamper, tempCheckpoints } from "./testing";

type User = Extract<Actor, { type: "user" }>;
const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let checkpoints: CheckpointConfig;
let compliance: User;
let alice: User;
let runId: string;
let evidence: RunEvidence;

async function user(email: string, role: User["role"], name: string): Promise<User> {
  const created = await db.prisma.$transaction((tx) => createUser(tx, system, { email, role, name }));
  return { type: "user", id: created.id, email, role };
}

/** The evidence as a third party gets it (JSON text), with one change applied. */
function changed(edit: (copy: RunEvidence) => void) {
  const copy = JSON.parse(JSON.stringify(evidence)) as RunEvidence;
  edit(copy);
  return verifyRunEvidence(parseEvidence(JSON.stringify(copy)), null);
}

beforeAll(async () => {
  setEnvForChildren({ AIRLOCK_LOOP_BREAKER_FAILURES: "100", AIRLOCK_BUDGET_CONCURRENT_RUNS: "50" });
  db = await createTestDatabase();
  checkpoints = await tempCheckpoints();
  const owner = await user("owner@example.com", "reviewer", "Owen Owner");
  alice = await user("alice@example.com", "reviewer", "Alice Archer");
  const bob = await user("bob@example.com", "reviewer", "Bob Baker");
  compliance = await user("compliance@example.com", "compliance", "Cora Compliance");
  await db.prisma.$transaction((tx) => publishPolicyText(tx, system, defaultPolicyText()));
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "mailer", ownerEmail: owner.email }));
  const agent: AgentActor = { type: "agent", id: created.agentId, name: "mailer", ownerId: owner.id, scopes: created.scopes };
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  runtime = await createRuntime(db.prisma, { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } }, { databaseUrl: db.url, execute: true });

  // Two approvals (a write to regulated data), previewed first.
  const view = await submitRun(runtime, agent, {
    code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "Please pay" });\nreturn "sent";`,
    purpose: "Remind a customer",
    provenance: { model: "test-model" },
  });
  runId = view.runId;
  expect(await getRun(runtime, agent, { runId, waitSeconds: 30 })).toMatchObject({ status: "pending_review" });
  const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
  const seen = reviewBinding(run);
  const deps = { db: db.prisma, startExecution: (id: string) => runtime.startExecution(id) };
  await decideRun(deps, alice, { runId, verdict: "approve", comment: "Amount checked against the invoice.", seen });
  await decideRun(deps, bob, { runId, verdict: "approve", seen });
  expect((await getRun(runtime, agent, { runId, waitSeconds: 60 })).status).toBe("succeeded");
  await recordOutcome(db.prisma, agent, { runId, action: "answered_user", detail: "Told the user the reminder went out." });

  evidence = await exportEvidenceAudited(db.prisma, compliance, checkpoints, runId);
}, 180_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("run evidence", () => {
  it("holds the run's events, content, reviews, tool calls and outcome, and verifies with the signing key", async () => {
    expect(evidence).toMatchObject({ kind: "airlock.run-evidence", version: 1, exportedBy: "compliance@example.com", run: { id: runId, status: "succeeded" } });
    expect(evidence.events.map((e) => e.action)).toEqual(
      expect.arrayContaining(["run.submitted", "run.pending_review", "run.reviewed", "run.approved", "run.succeeded", "run.outcome_recorded"]),
    );
    expect(evidence.content.reviews).toEqual([
      expect.objectContaining({ name: "Alice Archer", email: "alice@example.com", verdict: "approve", comment: "Amount checked against the invoice." }),
      expect.objectContaining({ name: "Bob Baker", email: "bob@example.com", verdict: "approve", comment: null }),
    ]);
    expect(evidence.content.policy).toMatchObject({ decision: "escalate", version: 1, text: defaultPolicyText() });
    expect(evidence.content.toolCalls.map((c) => [c.phase, c.tool, c.outcome])).toEqual([
      ["preview", "sendReminderEmail", "intercepted"],
      ["preview", "sendReminderEmail", "intercepted"],
      ["apply", "sendReminderEmail", "ok"],
    ]);
    expect(evidence.content.toolCalls[2]!.args).toEqual({ invoiceId: "inv_0001", message: "Please pay" });
    expect(evidence.content.outcomes).toEqual([expect.objectContaining({ action: "answered_user", detail: "Told the user the reminder went out." })]);

    const key = await loadSigningKey(checkpoints.keyFile);
    const verdict = verifyRunEvidence(parseEvidence(JSON.stringify(evidence)), key.publicKey);
    expect(verdict).toMatchObject({ status: "ok", problems: [] });
    expect(verdict.notes).toEqual([]); // everything in this run is covered by the chain

    // The export is an audited read by the person, and a checkpoint covering the run was signed first.
    const exported = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.evidence_exported", subjectId: runId } });
    expect(exported).toMatchObject({ actorType: "user", actorId: compliance.id, data: { events: evidence.events.length, toolCalls: 3, reviews: 2 } });
    expect(BigInt(evidence.proof.latestTreeHead.eventId)).toBeGreaterThanOrEqual(BigInt(evidence.events.at(-1)!.id));
  });

  it("without a key the file is only consistent with itself (UNANCHORED); another key is refused", () => {
    expect(verifyRunEvidence(evidence, null)).toMatchObject({ status: "unanchored", problems: [] });
    const other = generateKeyPairSync("ed25519").publicKey;
    const verdict = verifyRunEvidence(evidence, other);
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toEqual([
      expect.stringMatching(/^tree head \(size \d+\): signed by another key/),
      expect.stringMatching(/^latest tree head .*another key/),
      expect.stringMatching(/^the file: signed by another key/),
    ]);
  });

  it("tamper: with the key, a change to a value no event digests (a label, a call's duration) is refused by the file's signature", async () => {
    const key = await loadSigningKey(checkpoints.keyFile);
    const signed = (edit: (copy: RunEvidence) => void) => {
      const copy = JSON.parse(JSON.stringify(evidence)) as RunEvidence;
      edit(copy);
      return verifyRunEvidence(parseEvidence(JSON.stringify(copy)), key.publicKey);
    };
    const refused = ["the file: its signature does not verify (a value was changed after it was exported)"];
    expect(signed((e) => (e.run.agentName = "someone-else")).problems).toEqual(refused);
    expect(signed((e) => (e.content.toolCalls[2]!.durationMs += 1)).problems).toEqual(refused);
    expect(signed((e) => (e.exportedBy = "auditor@example.com")).problems).toEqual(refused);
    // Formatting is not content: the same values, indented, still verify.
    expect(verifyRunEvidence(parseEvidence(JSON.stringify(evidence, null, 2)), key.publicKey)).toMatchObject({ status: "ok", problems: [] });
  });

  it("tamper: the run's status is checked against its latest state event, even without the key", () => {
    const terminal = evidence.events.findLast((e) => e.action === "run.succeeded")!;
    expect(changed((e) => (e.run.status = "failed")).problems).toEqual([`run status: "failed" does not match event #${terminal.id} (run.succeeded)`]);
  });

  it("tamper: changed code is named against the event that digested it", () => {
    const verdict = changed((e) => (e.content.code = String(e.content.code).replace("Please pay", "Pay now")));
    const submitted = evidence.events.find((e) => e.action === "run.submitted")!;
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toContain(`code: digest does not match event #${submitted.id} (run.submitted)`);
  });

  it("tamper: a changed tool argument is named by call", () => {
    const verdict = changed((e) => ((e.content.toolCalls[2]!.args as { message: string }).message = "Pay double"));
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toEqual([`tool call ${evidence.content.toolCalls[2]!.seq} arguments: digest does not match the sealed digest`]);
    // Changing the digest too breaks the seal instead.
    const both = changed((e) => {
      const call = e.content.toolCalls[2]!;
      (call.args as { message: string }).message = "Pay double";
      call.argsDigest = "0".repeat(64);
    });
    expect(both.problems).toEqual([
      expect.stringMatching(/^tool calls: the 3 call\(s\) do not match the digest sealed by event #\d+ \(run\.succeeded\)$/),
      expect.any(String),
    ]);
  });

  it("tamper: a tool argument replaced by a forged truncation marker (a size within the cap) is named, not taken for a kept one", () => {
    const verdict = changed((e) => (e.content.toolCalls[2]!.args = { truncated: true, bytes: 12 }));
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toEqual([`tool call ${evidence.content.toolCalls[2]!.seq} arguments: digest does not match the sealed digest`]);
  });

  it("tamper: a changed verdict or comment is named against the run.reviewed event", () => {
    const reviewed = evidence.events.find((e) => e.action === "run.reviewed" && e.actorId === alice.id)!;
    const verdict = changed((e) => (e.content.reviews[0]!.verdict = "reject"));
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toEqual([`review by alice@example.com: verdict does not match event #${reviewed.id} (run.reviewed)`]);
    expect(changed((e) => (e.content.reviews[0]!.comment = "Not checked")).problems).toEqual([
      `review by alice@example.com: comment does not match event #${reviewed.id} (run.reviewed)`,
    ]);
    expect(changed((e) => e.content.reviews.splice(1, 1)).problems).toEqual([
      expect.stringMatching(/^event #\d+ \(run\.reviewed\): its review is missing from the file$/),
    ]);
  });

  it("tamper: a changed event fails its hash; re-hashed, it is not in the signed tree", () => {
    const index = evidence.events.findIndex((e) => e.action === "run.approved");
    const target = evidence.events[index]!;
    const edited = changed((e) => (e.events[index]!.data.approvalsRequired = 1));
    expect(edited.status).toBe("mismatch");
    expect(edited.problems).toEqual([`event #${target.id} (run.approved): its hash does not match its content (the event was changed)`]);
    const rehashed = changed((e) => {
      const event = e.events[index]!;
      event.data.approvalsRequired = 1;
      event.hash = chainHash(event.prevHash, { ...event, at: new Date(event.at) });
    });
    expect(rehashed.problems).toEqual([expect.stringMatching(new RegExp(`^event #${target.id} \\(run\\.approved\\): not included in the signed tree head`))]);
  });

  it("tamper: the policy text, the outcome and the consistency proof are checked too", () => {
    expect(changed((e) => (e.content.policy.text = `${e.content.policy.text}\npermit(principal, action, resource);`)).problems).toEqual([
      expect.stringMatching(/^policy text: digest does not match event #\d+ \(run\.(previewing|pending_review)\)$/),
    ]);
    expect(changed((e) => (e.content.outcomes[0]!.action = "discarded")).problems).toEqual(["outcomes: do not match the run.outcome_recorded events"]);
    const withProof = changed((e) => {
      e.proof.latestTreeHead.treeSize += 1;
      e.proof.consistencyProof = ["0".repeat(64), ...e.proof.consistencyProof];
    });
    expect(withProof.problems).toEqual([expect.stringMatching(/^consistency proof from tree size \d+ to \d+: does not verify$/)]);
  });

  it("refuses a file that is not exactly the schema, naming the place", () => {
    expect(() => parseEvidence("{")).toThrow(EvidenceFormatError);
    expect(() => parseEvidence(JSON.stringify({ ...evidence, extra: 1 }))).toThrow(/not a run evidence file .*\(top level\): Unrecognized key/);
    expect(() => parseEvidence(JSON.stringify({ ...evidence, version: 2 }))).toThrow(/version/);
    const badHash = JSON.parse(JSON.stringify(evidence)) as RunEvidence;
    badHash.events[0]!.hash = "XYZ";
    expect(() => parseEvidence(JSON.stringify(badHash))).toThrow(/events\.0\.hash: must be 64 lowercase hex digits/);
  });

  it("tamper: a second status or a value hidden under __proto__ (which JSON.parse keeps or drops unlike other readers) is refused", async () => {
    const text = JSON.stringify(evidence);
    // A reader that keeps the first of two keys would see "failed"; JSON.parse keeps the last.
    expect(() => parseEvidence(text.replace('"run":{', '"run":{"status":"failed",'))).toThrow(/the key "status" appears twice in one object/);
    // A payee smuggled into the applied call's arguments under __proto__ changes their digest, and the file's signature.
    const key = await loadSigningKey(checkpoints.keyFile);
    const smuggled = JSON.parse(text) as RunEvidence;
    const args = smuggled.content.toolCalls[2]!.args as Record<string, unknown>;
    Object.defineProperty(args, "__proto__", { value: { to: "attacker@example.com" }, enumerable: true });
    const verdict = verifyRunEvidence(parseEvidence(JSON.stringify(smuggled)), key.publicKey);
    expect(verdict.problems).toEqual([
      "the file: its signature does not verify (a value was changed after it was exported)",
      "tool call 3 arguments: digest does not match the sealed digest",
    ]);
  });

  it("refuses nesting deeper than any stored value instead of overflowing the verifier's stack", () => {
    const deep = JSON.parse(JSON.stringify(evidence)) as RunEvidence;
    deep.content.result = JSON.parse("[".repeat(50_000) + "]".repeat(50_000)) as unknown;
    expect(() => parseEvidence(JSON.stringify(deep))).toThrow(/nested deeper than 256 levels/);
  });

  it("a later export proves the events in the first head that held them all, consistent with the newest", async () => {
    const again = await exportEvidenceAudited(db.prisma, compliance, checkpoints, runId);
    // The first export is itself an event about the run, so it is in the second file.
    expect(again.events.at(-1)).toMatchObject({ action: "audit.evidence_exported", actorId: compliance.id });
    // The checkpoint job signs a head holding that event; later events go into newer heads.
    expect((await checkpointAudited(db.prisma, system, checkpoints)).checkpointFile).not.toBeNull();
    for (let i = 0; i < 5; i++) await append(db.prisma, "test.later");
    const third = await exportEvidenceAudited(db.prisma, compliance, checkpoints, runId);
    expect(third.events.length).toBe(again.events.length + 1);
    expect(third.proof.treeHead.treeSize).toBeLessThan(third.proof.latestTreeHead.treeSize);
    expect(third.proof.consistencyProof.length).toBeGreaterThan(0);
    const key = await loadSigningKey(checkpoints.keyFile);
    expect(verifyRunEvidence(third, key.publicKey)).toMatchObject({ status: "ok", problems: [] });
  });

  it("a review row changed in the database after the fact shows up as a mismatch in the next export", async () => {
    await tamper(db.prisma, `UPDATE "Review" SET comment = 'Rubber-stamped' WHERE "runId" = '${runId}' AND "reviewerId" = '${alice.id}'`);
    const exported = await exportEvidenceAudited(db.prisma, compliance, checkpoints, runId);
    const key = await loadSigningKey(checkpoints.keyFile);
    expect(verifyRunEvidence(exported, key.publicKey).problems).toEqual([
      expect.stringMatching(/^review by alice@example.com: comment does not match event #\d+/),
    ]);
  });

  it("refuses other roles and unknown runs", async () => {
    await expect(exportEvidenceAudited(db.prisma, alice, checkpoints, runId)).rejects.toMatchObject({ code: "forbidden" });
    await expect(exportEvidenceAudited(db.prisma, compliance, checkpoints, "00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(exportEvidenceAudited(db.prisma, compliance, checkpoints, "not-a-run")).rejects.toMatchObject({ code: "not_found" });
  });
});
