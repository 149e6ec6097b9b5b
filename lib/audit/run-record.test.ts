/**
 * A run's record against its events, on real parts (PostgreSQL, the demo ledger, the shipped
 * policies, the strict sandbox): the app role cannot rewrite who reviewed a run or what policy
 * decided (triggers), and `airlock audit verify` names each such change made behind the triggers,
 * and a run row no submission wrote.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrismaClient } from "@/lib/db";
import { submitRun } from "@/lib/intake/submit";
import { getRun } from "@/lib/runs/service";
import type { TestDatabase } from "@/lib/testing/db";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { recordReview, tamper } from "./testing";
import { verifyAuditChain } from "./verify";
import { connectAsAppRole, type AppRoleClient } from "@/lib/testing/app-role";

let ledger: LedgerRuntime;
let db: TestDatabase;
/** Allowed and executed; then reviewed, so it has a review to forge. */
let runId: string;
let reviewerId: string;
let otherUserId: string;

const verify = () => verifyAuditChain(db.prisma, { checkpoints: null });

beforeAll(async () => {
  ledger = await startLedgerRuntime("recorder");
  db = ledger.db;
  const submitted = await submitRun(ledger.runtime, ledger.agent, { code: `return 1 + 1;`, language: "javascript", purpose: "add" });
  runId = submitted.runId;
  let view = submitted;
  for (let i = 0; i < 6 && view.status !== "succeeded"; i++) view = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 20 });
  expect(view.status).toBe("succeeded");
  reviewerId = (await db.prisma.user.create({ data: { email: "rita@example.com", name: "Rita", role: "reviewer" } })).id;
  otherUserId = (await db.prisma.user.create({ data: { email: "alan@example.com", name: "Alan", role: "admin" } })).id;
  await recordReview(db.prisma, { runId, reviewerId, verdict: "approve", comment: "fine" });
}, 180_000);

afterAll(async () => {
  await ledger?.close();
});

describe("the app role cannot rewrite a run's record", () => {
  let appRole: AppRoleClient;
  let app: PrismaClient;

  beforeAll(async () => {
    appRole = await connectAsAppRole(db);
    app = appRole.client;
  });

  afterAll(() => appRole?.drop());

  it("a review is never changed or deleted, and never written without its run.reviewed event", async () => {
    for (const sql of [
      `UPDATE "Review" SET "reviewerId" = '${otherUserId}' WHERE "runId" = '${runId}'`,
      `UPDATE "Review" SET verdict = 'reject', comment = 'forged' WHERE "runId" = '${runId}'`,
      `DELETE FROM "Review" WHERE "runId" = '${runId}'`,
    ]) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(/Review is append-only/);
    }
    await expect(
      app.$executeRawUnsafe(`INSERT INTO "Review" (id, "runId", "reviewerId", verdict) VALUES (gen_random_uuid(), '${runId}', '${otherUserId}', 'approve')`),
    ).rejects.toThrow(/without its run.reviewed event/);
    expect(await db.prisma.review.findMany({ where: { runId }, select: { reviewerId: true, verdict: true } })).toEqual([{ reviewerId, verdict: "approve" }]);
  });

  it("what intake stored and policy decided never changes, and no run goes back before its decision", async () => {
    for (const [sql, field] of [
      [`UPDATE "Run" SET decision = 'escalate' WHERE id = '${runId}'`, "decision"],
      [`UPDATE "Run" SET "approvalsRequired" = 0, "reviewerRole" = 'admin' WHERE id = '${runId}'`, "reviewerRole"],
      [`UPDATE "Run" SET "codeSha256" = repeat('a', 64) WHERE id = '${runId}'`, "codeSha256"],
      [`UPDATE "Run" SET "policyVersionId" = NULL WHERE id = '${runId}'`, "policyVersionId"],
      [`UPDATE "Run" SET "capabilitySet" = '["ledger.issueRefund"]' WHERE id = '${runId}'`, "capabilitySet"],
      [`UPDATE "Run" SET "decisionReasons" = '[]' WHERE id = '${runId}'`, "decisionReasons"],
      [`UPDATE "Run" SET "createdAt" = now() - interval '1 year' WHERE id = '${runId}'`, "createdAt"],
    ] as const) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(new RegExp(`record is write-once: .*${field}`));
    }
    const pending = await submitRun(ledger.runtime, ledger.agent, {
      code: `return await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 1, currency: "EUR", reason: "r", idempotencyKey: "k-record" });`,
      purpose: "a refund waits for review",
    });
    await expect(app.$executeRawUnsafe(`UPDATE "Run" SET status = 'analyzed' WHERE id = '${pending.runId}'`)).rejects.toThrow(/write-once: status/);
  });
});

describe("verification names a run record changed behind the triggers", () => {
  it("an intact record verifies", async () => {
    expect(await verify()).toMatchObject({ ok: true, broken: null });
  });

  const cases: [string, string[], string[], { reason: string; field?: string }][] = [
    [
      "a review's verdict",
      [`UPDATE "Review" SET verdict = 'reject' WHERE "runId" = '<run>'`],
      [`UPDATE "Review" SET verdict = 'approve' WHERE "runId" = '<run>'`],
      { reason: "run_record_mismatch", field: "reviews" },
    ],
    [
      "a review's reviewer",
      [`UPDATE "Review" SET "reviewerId" = '<other>' WHERE "runId" = '<run>'`],
      [`UPDATE "Review" SET "reviewerId" = '<reviewer>' WHERE "runId" = '<run>'`],
      { reason: "run_record_mismatch", field: "reviews" },
    ],
    [
      "a review deleted",
      [`DELETE FROM "Review" WHERE "runId" = '<run>'`],
      [`INSERT INTO "Review" (id, "runId", "reviewerId", verdict, comment) VALUES (gen_random_uuid(), '<run>', '<reviewer>', 'approve', 'fine')`],
      { reason: "run_record_mismatch", field: "reviews" },
    ],
    [
      "the decision",
      [`UPDATE "Run" SET decision = 'escalate' WHERE id = '<run>'`],
      [`UPDATE "Run" SET decision = 'allow' WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "decision" },
    ],
    [
      "the approvals required",
      [`UPDATE "Run" SET "approvalsRequired" = 2 WHERE id = '<run>'`],
      [`UPDATE "Run" SET "approvalsRequired" = 0 WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "approvalsRequired" },
    ],
    [
      "the reviewer role",
      [`UPDATE "Run" SET "reviewerRole" = 'admin' WHERE id = '<run>'`],
      [`UPDATE "Run" SET "reviewerRole" = NULL WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "reviewerRole" },
    ],
    [
      "the capability set",
      [`UPDATE "Run" SET "capabilitySet" = '["ledger.issueRefund"]' WHERE id = '<run>'`],
      [
        `UPDATE "Run" r SET "capabilitySet" = e.data -> 'capabilitySet' FROM "AuditEvent" e WHERE r.id = '<run>' AND e."subjectId" = '<run>' AND e.action = 'run.analyzed'`,
      ],
      { reason: "run_record_mismatch", field: "capabilitySet" },
    ],
    [
      "the code hash",
      [`UPDATE "Run" SET "codeSha256" = repeat('a', 64) WHERE id = '<run>'`],
      [
        `UPDATE "Run" r SET "codeSha256" = e.data ->> 'codeSha256' FROM "AuditEvent" e WHERE r.id = '<run>' AND e."subjectId" = '<run>' AND e.action = 'run.submitted'`,
      ],
      { reason: "run_record_mismatch", field: "codeSha256" },
    ],
    [
      "the decision's reasons",
      [
        `UPDATE "Run" SET "decisionReasons" = '[{"policyId":"forged","text":"A reviewer said yes.","source":""}]'::jsonb || "decisionReasons" WHERE id = '<run>'`,
      ],
      [`UPDATE "Run" SET "decisionReasons" = "decisionReasons" - 0 WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "decisionReasons" },
    ],
    [
      "the facts",
      [`UPDATE "Run" SET facts = facts || '{"forged":true}' WHERE id = '<run>'`],
      [`UPDATE "Run" SET facts = facts - 'forged' WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "facts" },
    ],
    [
      "the findings",
      [`UPDATE "Run" SET findings = '[{"code":"forged","message":"nothing to see"}]'::jsonb || findings WHERE id = '<run>'`],
      [`UPDATE "Run" SET findings = findings - 0 WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "findings" },
    ],
    [
      "the skills",
      [`UPDATE "Run" SET skills = '[{"name":"forged","version":1,"versionId":"forged"}]'::jsonb || skills WHERE id = '<run>'`],
      [`UPDATE "Run" SET skills = skills - 0 WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "skills" },
    ],
    [
      "the policy version",
      [`UPDATE "Run" SET "policyVersionId" = NULL WHERE id = '<run>'`],
      [
        `UPDATE "Run" SET "policyVersionId" = (SELECT p.id FROM "PolicyVersion" p JOIN "AuditEvent" e ON (e.data ->> 'policyVersion')::int = p.version
           WHERE e."subjectId" = '<run>' AND e.data ? 'policyVersion' ORDER BY e.id LIMIT 1) WHERE id = '<run>'`,
      ],
      { reason: "run_record_mismatch", field: "policyVersion" },
    ],
    [
      "the status",
      [`UPDATE "Run" SET status = 'failed' WHERE id = '<run>'`],
      [`UPDATE "Run" SET status = 'succeeded' WHERE id = '<run>'`],
      { reason: "run_record_mismatch", field: "status" },
    ],
    [
      "the agent",
      [`UPDATE "Run" SET "agentId" = (SELECT id FROM "Agent" WHERE id <> "Run"."agentId" LIMIT 1) WHERE id = '<run>'`],
      [`UPDATE "Run" r SET "agentId" = e."actorId"::uuid FROM "AuditEvent" e WHERE r.id = '<run>' AND e."subjectId" = '<run>' AND e.action = 'run.submitted'`],
      { reason: "run_record_mismatch", field: "agentId" },
    ],
  ];

  for (const [what, change, restore, broken] of cases) {
    it(`${what} changed`, async () => {
      const fill = (sql: string) => sql.replaceAll("<run>", runId).replaceAll("<reviewer>", reviewerId).replaceAll("<other>", otherUserId);
      if (what === "the agent") await db.prisma.agent.create({ data: { name: `other-${randomBytes(3).toString("hex")}`, ownerId: otherUserId } });
      await tamper(db.prisma, ...change.map(fill));
      const report = await verify();
      expect(report.ok).toBe(false);
      expect(report.broken).toMatchObject({ reason: broken.reason, run: { id: runId, ...(broken.field ? { field: broken.field } : {}) } });
      await tamper(db.prisma, ...restore.map(fill));
      expect(await verify()).toMatchObject({ ok: true, broken: null });
    });
  }

  it("a run row no submission wrote (a copy of a real one, reviews and all) is unrecorded", async () => {
    const forged = "22222222-2222-4222-8222-222222222222";
    await tamper(
      db.prisma,
      `CREATE TEMP TABLE copy ON COMMIT DROP AS SELECT * FROM "Run" WHERE id = '${runId}'`,
      `UPDATE copy SET id = '${forged}', purpose = 'forged', "idempotencyKey" = NULL, "requestDigest" = 'forged'`,
      `INSERT INTO "Run" SELECT * FROM copy`,
    );
    const report = await verify();
    expect(report.broken).toMatchObject({ reason: "unrecorded_run", run: { id: forged }, detail: expect.stringContaining("no run.submitted event") });
  });
});
