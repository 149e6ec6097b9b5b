import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { recordAudit } from "./record";
import { exportAudited, searchAudited } from "./service";
import { recordReview, sha256, SYSTEM, tamper } from "./testing";

let db: TestDatabase;
let compliance: Actor;
let agentActor: Extract<Actor, { type: "agent" }>;
let runId: string;
let purgedRunId: string;

async function collect(rows: AsyncGenerator<string>): Promise<string> {
  let text = "";
  for await (const chunk of rows) text += chunk;
  return text;
}

const csvRows = (text: string) => parse(text, { columns: true }) as Record<string, string>[];
const jsonRows = (text: string) =>
  text
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function seedRun(purpose: string, code: string) {
  const row = await db.prisma.run.create({
    data: {
      agentId: agentActor.id,
      language: "javascript",
      code,
      codeSha256: sha256(code),
      purpose,
      inputsDigest: sha256("[]"),
      requestDigest: sha256(purpose),
      status: "succeeded",
      decision: "escalate",
      result: { refunded: 120 },
      finishedAt: new Date(),
    },
  });
  const subject = { type: "run", id: row.id };
  await db.prisma.$transaction((tx) => recordAudit(tx, { actor: agentActor, action: "run.submitted", subject, data: {} }));
  const reviewer = await db.prisma.user.upsert({
    where: { email: "rita@example.com" },
    update: {},
    create: { email: "rita@example.com", name: "Rita Reviewer", role: "reviewer" },
  });
  await recordReview(db.prisma, { runId: row.id, reviewerId: reviewer.id, verdict: "approve", comment: "fine" });
  await db.prisma.$transaction((tx) =>
    recordAudit(tx, { actor: { type: "user", id: reviewer.id, email: reviewer.email, role: "reviewer" }, action: "run.approved", subject, data: {} }),
  );
  await db.prisma.$transaction(async (tx) => {
    await tx.runToolCall.create({
      data: {
        runId: row.id,
        seq: 1,
        server: "ledger",
        tool: "issueRefund",
        argsDigest: "a".repeat(64),
        resultDigest: "b".repeat(64),
        args: { invoiceId: "inv-77", amount: 120 },
        result: { refundId: "rf-9" },
        durationMs: 4,
        outcome: "ok",
      },
    });
    await recordAudit(tx, { actor: SYSTEM, action: "run.succeeded", subject, data: { toolCalls: 1, toolCallsDigest: "x" } });
  });
  return row.id;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const person = await db.prisma.user.create({ data: { email: "carla@example.com", name: "Carla Compliance", role: "compliance" } });
  compliance = { type: "user", id: person.id, email: person.email, role: "compliance" };
  const owner = await db.prisma.user.create({ data: { email: "owen@example.com", name: "Owen Owner", role: "admin" } });
  const agent = await db.prisma.agent.create({ data: { name: "refund-bot", ownerId: owner.id } });
  agentActor = { type: "agent", id: agent.id, name: agent.name, ownerId: owner.id, scopes: [] };
  runId = await seedRun("Refund the duplicate charge", "return await tools.ledger.issueRefund({ invoiceId: 'inv-77', amount: 120 });");
  purgedRunId = await seedRun("Old refund", "return 1;");
  // The first run's plan preview intercepted its write (not a call the run made), and its result was released.
  await db.prisma.runToolCall.create({
    data: { runId, seq: 2, server: "ledger", tool: "issueRefund", argsDigest: "c".repeat(64), durationMs: 0, outcome: "intercepted", phase: "preview" },
  });
  const rita = await db.prisma.user.findUniqueOrThrow({ where: { email: "rita@example.com" } });
  await db.prisma.resultRelease.create({ data: { runId, reviewerId: rita.id, comment: "checked by hand", resultDigest: "d".repeat(64) } });
  await tamper(
    db.prisma,
    `UPDATE "Run" SET code = '', result = NULL, purged = '{"code": "2026-11-02T03:04:05.000Z", "result": "2026-11-02T03:04:05.000Z"}', "purgedAt" = '2026-11-02T03:04:05Z' WHERE id = '${purgedRunId}'`,
    `UPDATE "RunToolCall" SET args = NULL, result = NULL, "purgedAt" = '2026-11-02T03:04:05Z' WHERE "runId" = '${purgedRunId}'`,
  );
  // Compliance's own search: an audit read that "no audit reads" leaves out.
  await searchAudited(db.prisma, compliance, { q: "refund" });
});
afterAll(() => db?.drop());

describe("event export", () => {
  it("carries names beside ids, readable UTC times and the run's content", async () => {
    const { manifest, rows } = await exportAudited(db.prisma, compliance, {}, "csv");
    const events = csvRows(await collect(rows));
    expect(manifest.columns[1]).toBe("at (UTC)");
    expect(events).toHaveLength(manifest.rowCount);
    const submitted = events.find((e) => e.action === "run.submitted" && e.subjectId === runId)!;
    expect(submitted).toMatchObject({ actorType: "agent", actorName: "refund-bot", subjectName: "refund-bot", purpose: "Refund the duplicate charge" });
    expect(submitted.code).toContain("tools.ledger.issueRefund");
    expect(submitted["at (UTC)"]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/);
    const approved = events.find((e) => e.action === "run.approved" && e.subjectId === runId)!;
    expect(approved).toMatchObject({ actorName: "Rita Reviewer", actorEmail: "rita@example.com", code: "" });
    const done = events.find((e) => e.action === "run.succeeded" && e.subjectId === runId)!;
    expect(JSON.parse(done.result!)).toEqual({ refunded: 120 });
    expect(JSON.parse(done.toolCalls!)).toEqual([
      {
        seq: 1,
        tool: "ledger.issueRefund",
        phase: "apply",
        outcome: "ok",
        args: { invoiceId: "inv-77", amount: 120 },
        result: { refundId: "rf-9" },
        error: null,
      },
      // The plan preview's call, told apart by its phase.
      { seq: 2, tool: "ledger.issueRefund", phase: "preview", outcome: "intercepted", args: null, result: null, error: null },
    ]);
    const search = events.find((e) => e.action === "audit.searched")!;
    expect(search).toMatchObject({ actorName: "Carla Compliance", actorEmail: "carla@example.com" });
  });

  it("says what retention purged, with its date", async () => {
    const { rows } = await exportAudited(db.prisma, compliance, {}, "jsonl");
    const events = jsonRows(await collect(rows));
    const submitted = events.find((e) => e.action === "run.submitted" && e.subjectId === purgedRunId)!;
    expect(submitted.code).toBe("purged on 2026-11-02 by retention");
    expect(submitted.purpose).toBe("Old refund");
    const done = events.find((e) => e.action === "run.succeeded" && e.subjectId === purgedRunId)!;
    expect(done.result).toBe("purged on 2026-11-02 by retention");
    expect(done.toolCalls).toEqual([expect.objectContaining({ args: "purged on 2026-11-02 by retention", result: "purged on 2026-11-02 by retention" })]);
    expect(submitted.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("leaves out the log's own reads when asked, and says so", async () => {
    const all = jsonRows(await collect((await exportAudited(db.prisma, compliance, {}, "jsonl")).rows));
    expect(all.some((e) => String(e.action).startsWith("audit."))).toBe(true);
    const { manifest, rows } = await exportAudited(db.prisma, compliance, {}, "jsonl", { excludeAuditReads: true });
    const events = jsonRows(await collect(rows));
    expect(manifest.auditReads).toBe("excluded");
    expect(events.length).toBe(manifest.rowCount);
    expect(events.filter((e) => String(e.action).startsWith("audit."))).toEqual([]);
    expect(events.filter((e) => e.subjectId === runId).map((e) => e.action)).toEqual(["run.submitted", "run.reviewed", "run.approved", "run.succeeded"]);
    const recorded = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.exported" }, orderBy: { id: "desc" } });
    expect(recorded.data).toMatchObject({ auditReads: "excluded", rows: "events" });
  });
});

describe("batches", () => {
  it("a batch is cut by bytes as well as rows, and no row is lost or repeated at the cut", async () => {
    const whole = jsonRows(await collect((await exportAudited(db.prisma, compliance, {}, "jsonl")).rows));
    const cut = jsonRows(await collect((await exportAudited(db.prisma, compliance, {}, "jsonl", { batchBytes: 1 })).rows));
    const ids = (rows: Record<string, unknown>[]) => rows.map((r) => r.id).filter((id) => id !== undefined);
    // The second export's own audit.exported event of the first is in it too; everything before matches.
    expect(ids(cut).slice(0, ids(whole).length)).toEqual(ids(whole));
    const perRun = csvRows(await collect((await exportAudited(db.prisma, compliance, {}, "csv", { rows: "runs", batchBytes: 1 })).rows));
    const perRunWhole = csvRows(await collect((await exportAudited(db.prisma, compliance, {}, "csv", { rows: "runs" })).rows));
    expect(perRun.map((r) => r.runId)).toEqual(perRunWhole.map((r) => r.runId));
    expect(perRun.length).toBeGreaterThan(1);
  });
});

describe("per-run export", () => {
  it("one row per matching run: purpose, agent, decision, reviewers, verdicts, status, calls, result, link", async () => {
    const { manifest, rows } = await exportAudited(db.prisma, compliance, { agent: "refund" }, "csv", { rows: "runs", batchSize: 1 });
    const runs = csvRows(await collect(rows));
    expect(manifest).toMatchObject({ rows: "runs", scope: "matching runs", rowCount: 2 });
    expect(runs.map((r) => r.runId)).toEqual([runId, purgedRunId]);
    expect(runs[0]).toMatchObject({
      agent: "refund-bot",
      owner: "owen@example.com",
      purpose: "Refund the duplicate charge",
      status: "succeeded",
      decision: "escalate",
      reviewers: "Rita Reviewer <rita@example.com>",
      verdicts: "approve",
      releases: "Rita Reviewer <rita@example.com>: checked by hand",
      toolCalls: "1",
      result: '{"refunded": 120}',
    });
    expect(runs[0]!.link).toMatch(new RegExp(`^https?://[^/]+/audit/runs/${runId}$`));
    expect(runs[0]!["submitted (UTC)"]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/);
    expect(runs[1]!.result).toBe('"purged on 2026-11-02 by retention"');
  });
});
