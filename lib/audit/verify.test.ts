import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { CHECKPOINT_MAX_UNCOVERED_MS, loadCheckpoints, writeCheckpoint, type CheckpointConfig } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import type { PrismaClient } from "@/lib/db";
import { chainHash, recordAudit } from "./record";
import { storedContentDigests } from "./run-content";
import { MAX_STORED_CALL_BYTES } from "./stored-calls";
import { checkpointAudited, runVerification } from "./service";
import { append, seedRun, SYSTEM, tamper, tempCheckpoints } from "./testing";
import { verifyAuditChain } from "./verify";
import { sequenceAudit } from "@/lib/db/audit-sequence";

const open: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.drop()));
});

/** A fresh database with a log of ~20 events, a sealed run with 3 tool calls, and a gap at one id. */
async function freshLog() {
  const db = await createTestDatabase();
  open.push(db);
  const checkpoints = await tempCheckpoints();
  for (let i = 1; i <= 5; i++) await append(db.prisma, "test.event", { type: "thing", id: String(i) }, { n: i });
  // A sequencer transaction that rolled back leaves a gap in the ids, as can happen in production.
  await sequenceAudit(db.prisma);
  await db.prisma.$queryRawUnsafe(`SELECT nextval(pg_get_serial_sequence('"AuditEvent"', 'id'))`);
  const run = await seedRun(db.prisma, { calls: 3 });
  for (let i = 6; i <= 15; i++) await append(db.prisma, "test.event", { type: "thing", id: String(i) }, { n: i });
  const ids = (await db.prisma.auditEvent.findMany({ select: { id: true }, orderBy: { id: "asc" } })).map((e) => e.id);
  const seal = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectType: "run", action: "run.succeeded" } });
  return { db, checkpoints, run, ids, sealId: seal.id };
}

function oneLeafTree() {
  const range = CompactRange.empty();
  range.append(eventLeafHash("a".repeat(64)));
  return { size: range.size, root: range.root(), frontier: range.frontier() };
}

async function verify(db: TestDatabase, checkpoints: CheckpointConfig | null, from?: bigint) {
  return verifyAuditChain(db.prisma, { checkpoints, from, batchSize: 4 });
}

describe("verifyAuditChain", () => {
  it("accepts an intact log, checks the tool-call seal, and the verification signs a checkpoint", async () => {
    const { db, checkpoints, ids } = await freshLog();
    const report = await verify(db, checkpoints);
    expect(report).toMatchObject({ ok: true, broken: null, eventsChecked: ids.length, sealsChecked: 1, toolCallsChecked: 3 });
    expect(report.head?.id).toBe(ids.at(-1)!.toString());

    const { report: recorded, checkpointFile } = await runVerification(db.prisma, SYSTEM, checkpoints);
    expect(recorded.ok).toBe(true);
    expect(checkpointFile).toMatch(/checkpoint-0+\d+-/);
    const saved = await loadCheckpoints(checkpoints);
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({ valid: true, checkpoint: { eventId: ids.at(-1)!.toString() } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.verified" } });
    expect(event.data).toMatchObject({ ok: true, eventsChecked: ids.length, checkpointWritten: true });
    // The next verification also checks that checkpoint.
    expect((await verify(db, checkpoints)).checkpointsChecked).toBe(1);
  });

  it("detects a changed field: the altered event is named", async () => {
    const { db, checkpoints, ids } = await freshLog();
    const target = ids[3]!;
    await tamper(db.prisma, `UPDATE "AuditEvent" SET data = '{"n": 999}' WHERE id = ${target}`);
    const report = await verify(db, checkpoints);
    expect(report.ok).toBe(false);
    expect(report.broken).toMatchObject({ eventId: target.toString(), reason: "hash_mismatch" });
  });

  it("detects a changed actor even when the attacker keeps data intact", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await tamper(db.prisma, `UPDATE "AuditEvent" SET "actorId" = 'someone-else' WHERE id = ${ids[7]}`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: ids[7]!.toString(), reason: "hash_mismatch" });
  });

  it("detects a deleted event: its successor is named", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await tamper(db.prisma, `DELETE FROM "AuditEvent" WHERE id = ${ids[4]}`);
    const report = await verify(db, checkpoints);
    expect(report.broken).toMatchObject({ eventId: ids[5]!.toString(), reason: "prev_hash_mismatch" });
  });

  it("detects an event inserted in the middle: the inserted event is named", async () => {
    const { db, checkpoints, ids } = await freshLog();
    // The rolled-back append left a free id between the 5th and 6th events: forge one there,
    // correctly hashed and linked to its predecessor.
    const before = await db.prisma.auditEvent.findUniqueOrThrow({ where: { id: ids[4]! } });
    const forgedId = ids[4]! + 1n;
    expect(ids).not.toContain(forgedId);
    const forged = {
      at: new Date(before.at.getTime() + 1),
      actorType: "user",
      actorId: "mallory",
      action: "run.approved",
      subjectType: "run",
      subjectId: null,
      data: {},
    };
    const hash = chainHash(before.hash, forged);
    await tamper(
      db.prisma,
      `INSERT INTO "AuditEvent" (id, at, "actorType", "actorId", action, "subjectType", "subjectId", data, "prevHash", hash)
       VALUES (${forgedId}, '${forged.at.toISOString()}', 'user', 'mallory', 'run.approved', 'run', NULL, '{}', '${before.hash}', '${hash}')`,
    );
    const report = await verify(db, checkpoints);
    expect(report.broken).toMatchObject({ eventId: forgedId.toString(), reason: "inserted_event" });
  });

  it("detects a rewritten tail with recomputed hashes through the signed checkpoint", async () => {
    const { db, checkpoints, ids } = await freshLog();
    const { checkpointFile } = await runVerification(db.prisma, SYSTEM, checkpoints);
    expect(checkpointFile).not.toBeNull();
    const checkpointed = ids.at(-1)!;
    // Rewrite from the 9th event on: change it, then recompute every hash after it.
    const events = await db.prisma.auditEvent.findMany({ where: { id: { gte: ids[8]! } }, orderBy: { id: "asc" } });
    let prev = events[0]!.prevHash;
    const statements: string[] = [];
    for (const [index, event] of events.entries()) {
      const data = index === 0 ? { n: -1 } : event.data;
      const hash = chainHash(prev, { ...event, data });
      statements.push(`UPDATE "AuditEvent" SET data = '${JSON.stringify(data)}', "prevHash" = '${prev}', hash = '${hash}' WHERE id = ${event.id}`);
      prev = hash;
    }
    await tamper(db.prisma, ...statements);

    // The chain alone is consistent again: that is why checkpoints exist.
    expect((await verify(db, null)).ok).toBe(true);
    const report = await verify(db, checkpoints);
    expect(report.broken).toMatchObject({ eventId: checkpointed.toString(), reason: "checkpoint_mismatch" });
  });

  it("detects a truncated tail through the signed checkpoint", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await runVerification(db.prisma, SYSTEM, checkpoints);
    await sequenceAudit(db.prisma); // the verification's own event is chained too before the cut
    const cut = ids.at(-3)!;
    await tamper(db.prisma, `DELETE FROM "AuditEvent" WHERE id >= ${cut}`);
    const report = await verify(db, checkpoints);
    expect(report.broken?.reason).toBe("checkpoint_beyond_head");
  });

  it("detects a tampered tool call: the sealing terminal event is named", async () => {
    const { db, checkpoints, run, sealId } = await freshLog();
    await tamper(db.prisma, `UPDATE "RunToolCall" SET tool = 'deleteInvoices' WHERE "runId" = '${run.runId}' AND seq = 2`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_calls_mismatch" });
  });

  it("detects a tool call's stored arguments no longer matching their digest", async () => {
    const { db, checkpoints, run, sealId } = await freshLog();
    await tamper(db.prisma, `UPDATE "RunToolCall" SET args = '{"status": "paid"}' WHERE "runId" = '${run.runId}' AND seq = 1`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_call_digest_mismatch" });
  });

  it("accepts a tool call's arguments as their canonical text or as jsonb wrote them, and no other text of the same value", async () => {
    const { db, checkpoints, run, sealId } = await freshLog();
    const argsOf = async () =>
      (await db.prisma.$queryRaw<{ args: string }[]>`SELECT args::text AS args FROM "RunToolCall" WHERE "runId" = ${run.runId}::uuid AND seq = 1`)[0]!.args;
    const setArgs = (sql: string) => tamper(db.prisma, `UPDATE "RunToolCall" SET args = ${sql} WHERE "runId" = '${run.runId}' AND seq = 1`);
    expect(await argsOf()).toBe('{"page":0,"status":"open"}'); // the canonical text its digest covers
    // A row from before the text was kept: the migration cast jsonb's text to json.
    await setArgs(`'{"status":"open","page":0}'::jsonb::json`);
    expect(await argsOf()).toBe('{"page": 0, "status": "open"}');
    expect(await verify(db, checkpoints)).toMatchObject({ ok: true, toolCallsChecked: 3 });
    // The same value in texts neither writer makes: a reader of the text could see another value.
    for (const text of [
      '{"page":1,"page":0,"status":"open"}',
      '{"status": "open", "page": 0}',
      '{"page":0.0,"status":"open"}',
      '{"page":0,"status":"op\\u0065n"}',
    ]) {
      await setArgs(`'${text}'`);
      expect((await verify(db, checkpoints)).broken, text).toMatchObject({ eventId: sealId.toString(), reason: "tool_call_digest_mismatch" });
    }
    await setArgs(`'{"page":1,"status":"open"}'`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_call_digest_mismatch" });
  });

  it("accepts the size cap's marker only for a value past the cap", async () => {
    const { db, checkpoints, run, sealId } = await freshLog();
    const setResult = (text: string) => tamper(db.prisma, `UPDATE "RunToolCall" SET result = '${text}' WHERE "runId" = '${run.runId}' AND seq = 2`);
    // The seeded result is a few bytes: its marker cannot stand for it.
    await setResult('{"bytes":40,"truncated":true}');
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_call_digest_mismatch" });
    await setResult(`{"bytes":${MAX_STORED_CALL_BYTES + 1},"truncated":true,"note":"x"}`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_call_digest_mismatch" });
    // The marker of a value past the cap names a size only: the digest's value was not kept.
    await setResult(`{"bytes":${MAX_STORED_CALL_BYTES + 1},"truncated":true}`);
    expect(await verify(db, checkpoints)).toMatchObject({ ok: true });
  });

  it("detects a deleted or added tool call", async () => {
    const { db, checkpoints, run, sealId } = await freshLog();
    await tamper(db.prisma, `DELETE FROM "RunToolCall" WHERE "runId" = '${run.runId}' AND seq = 3`);
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: sealId.toString(), reason: "tool_calls_mismatch" });
  });

  it("detects tool calls that no event seals", async () => {
    const { db, checkpoints } = await freshLog();
    const unsealed = await seedRun(db.prisma, {}); // no terminal event
    await db.prisma.runToolCall.create({
      data: { runId: unsealed.runId, seq: 1, server: "ledger", tool: "addNote", argsDigest: "0".repeat(64), durationMs: 1, outcome: "ok" },
    });
    expect((await verify(db, checkpoints)).broken).toMatchObject({ eventId: null, reason: "unsealed_tool_calls" });
  });

  it("does not count the tool calls of a run still in flight as unsealed; once the run is terminal they are", async () => {
    const { db, checkpoints } = await freshLog();
    const inFlight = await seedRun(db.prisma, { status: "pending_review" });
    await db.prisma.run.update({ where: { id: inFlight.runId }, data: { status: "running" } });
    await append(db.prisma, "run.running", { type: "run", id: inFlight.runId });
    await db.prisma.runToolCall.create({
      data: { runId: inFlight.runId, seq: 1, server: "ledger", tool: "addNote", argsDigest: "0".repeat(64), durationMs: 0, outcome: "started" },
    });
    expect(await verify(db, checkpoints)).toMatchObject({ ok: true, broken: null });
    // Terminal without a sealing event (e.g. a terminal event written without its seal): a break.
    await db.prisma.run.update({ where: { id: inFlight.runId }, data: { status: "failed" } });
    await append(db.prisma, "run.failed", { type: "run", id: inFlight.runId });
    expect((await verify(db, checkpoints)).broken).toMatchObject({
      eventId: null,
      reason: "unsealed_tool_calls",
      detail: expect.stringContaining(inFlight.runId),
    });
  });

  it("reports checkpoints missing when no checkpoint covers an event older than the allowed gap", async () => {
    const { db, checkpoints, ids } = await freshLog();
    const gap = CHECKPOINT_MAX_UNCOVERED_MS / 60_000;
    const later = (minutes: number) => new Date(Date.now() + minutes * 60_000);
    // No checkpoint, but the log is younger than the gap: nothing is missing yet.
    expect(await verifyAuditChain(db.prisma, { checkpoints, now: later(gap - 0.5) })).toMatchObject({ ok: true });
    const report = await verifyAuditChain(db.prisma, { checkpoints, now: later(gap + 1) });
    expect(report).toMatchObject({
      ok: false,
      broken: {
        eventId: ids[0]!.toString(),
        reason: "checkpoints_missing",
        detail: expect.stringMatching(/no checkpoint at all.*airlock audit checkpoint --bootstrap/),
      },
    });

    // A checkpoint of the head covers everything up to it; what came after it ages from then on.
    await runVerification(db.prisma, SYSTEM, checkpoints);
    const afterCheckpoint = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.verified" } });
    expect(await verifyAuditChain(db.prisma, { checkpoints, now: later(gap - 0.5) })).toMatchObject({ ok: true });
    expect((await verifyAuditChain(db.prisma, { checkpoints, now: later(gap + 1) })).broken).toMatchObject({
      eventId: afterCheckpoint.id.toString(),
      reason: "checkpoints_missing",
      detail: expect.stringContaining(`the newest checkpoint names #${ids.at(-1)}`),
    });
  });

  it("names a real break before missing checkpoints", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await tamper(db.prisma, `UPDATE "AuditEvent" SET action = 'forged' WHERE id = ${ids[6]}`);
    const report = await verifyAuditChain(db.prisma, { checkpoints, now: new Date(Date.now() + 60 * 60_000) });
    expect(report.broken).toMatchObject({ eventId: ids[6]!.toString(), reason: "hash_mismatch" });
  });

  it("an emptied checkpoint directory is not healed: verifying twice fails twice and writes no checkpoint", async () => {
    const { db, checkpoints } = await freshLog();
    expect((await runVerification(db.prisma, SYSTEM, checkpoints)).checkpointFile).not.toBeNull();
    await rm(checkpoints.dir, { recursive: true, force: true });
    const now = new Date(Date.now() + CHECKPOINT_MAX_UNCOVERED_MS + 60_000);
    for (let attempt = 0; attempt < 2; attempt++) {
      const { report, checkpointFile } = await runVerification(db.prisma, SYSTEM, checkpoints, { now });
      expect(report).toMatchObject({ ok: false, broken: { reason: "checkpoints_missing" } });
      expect(checkpointFile).toBeNull();
      expect(await loadCheckpoints(checkpoints)).toEqual([]);
    }
    const recorded = await db.prisma.auditEvent.findMany({ where: { action: "audit.verified" }, orderBy: { id: "asc" } });
    expect(recorded.map((e) => e.data as { ok: boolean; checkpointWritten: boolean })).toEqual([
      expect.objectContaining({ ok: true, checkpointWritten: true }),
      expect.objectContaining({ ok: false, checkpointWritten: false }),
      expect.objectContaining({ ok: false, checkpointWritten: false }),
    ]);
    // Nor does the checkpoint job heal it, having no checkpoint to extend from — unless an operator bootstraps.
    const job = await checkpointAudited(db.prisma, SYSTEM, checkpoints, { now });
    expect(job).toMatchObject({ report: { ok: false, broken: { reason: "checkpoints_missing" } }, checkpointFile: null });
    const bootstrapped = await checkpointAudited(db.prisma, SYSTEM, checkpoints, { now, bootstrap: true });
    expect(bootstrapped.checkpointFile).not.toBeNull();
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.checkpointed" }, orderBy: { id: "desc" } });
    expect(event.data).toMatchObject({ ok: true, bootstrap: true, checkpointWritten: true });
  });

  it("the checkpoint job extends from the newest valid checkpoint, even after a pause longer than the gap", async () => {
    const { db, checkpoints } = await freshLog();
    await runVerification(db.prisma, SYSTEM, checkpoints);
    await append(db.prisma, "test.after");
    const now = new Date(Date.now() + 24 * 60 * 60_000); // e.g. npm start stopped overnight
    expect((await verifyAuditChain(db.prisma, { checkpoints, now })).broken?.reason).toBe("checkpoints_missing");
    const { report, checkpointFile } = await checkpointAudited(db.prisma, SYSTEM, checkpoints, { now });
    expect(report.ok).toBe(true);
    expect(checkpointFile).not.toBeNull();
  });

  it("refuses a forged checkpoint file", async () => {
    const { db, checkpoints, ids } = await freshLog();
    const real = await writeCheckpoint(checkpoints, { id: ids[2]!, hash: "a".repeat(64), at: new Date() }, oneLeafTree());
    const forged = { ...real.checkpoint, eventId: ids[3]!.toString() };
    await writeFile(join(checkpoints.dir, "checkpoint-forged.json"), JSON.stringify(forged));
    const report = await verify(db, checkpoints);
    expect(report.broken).toMatchObject({ reason: "checkpoint_invalid", eventId: ids[3]!.toString() });
  });

  it("--from anchors on the preceding event and checks only what follows", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await tamper(db.prisma, `UPDATE "AuditEvent" SET action = 'forged' WHERE id = ${ids[1]}`);
    expect((await verify(db, checkpoints)).broken?.eventId).toBe(ids[1]!.toString());
    const later = await verify(db, checkpoints, ids[5]!);
    expect(later).toMatchObject({ ok: true, from: ids[5]!.toString(), eventsChecked: ids.length - 5 });
  });

  it("the tool-call table refuses UPDATE and DELETE like the audit log", async () => {
    const { db, run } = await freshLog();
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "RunToolCall" SET tool = 'x' WHERE "runId" = '${run.runId}'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`DELETE FROM "RunToolCall"`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`TRUNCATE "RunToolCall" CASCADE`)).rejects.toThrow(/append-only/);
  });
});

describe("verifyAuditChain's reads ahead of the walk", () => {
  /** What the walk reads besides the events, by the text of its query. */
  const READS = {
    "the tool calls of a batch's runs": 'FROM "RunToolCall" WHERE',
    "the rows of a batch's runs": 'FROM "Run" WHERE',
    "the search for unsealed tool calls": 'FROM "RunToolCall" t',
  };

  /** The database, except that the raw reads whose text contains `query` fail. */
  function failingReads(db: PrismaClient, query: string): PrismaClient {
    return new Proxy(db, {
      get(target, prop) {
        if (prop !== "$queryRaw") return Reflect.get(target, prop);
        return (sql: TemplateStringsArray, ...values: unknown[]) =>
          sql.join("?").includes(query) ? Promise.reject(new Error(`the read failed: ${query}`)) : target.$queryRaw(sql, ...values);
      },
    });
  }

  /** Rejections nobody handled while `body` ran (a read ahead that failed and was dropped). */
  async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      await body();
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", record);
    }
    return unhandled;
  }

  it("fails the verification when a read it checks against fails", async () => {
    const { db, checkpoints, run } = await freshLog();
    await db.prisma.$transaction(async (tx) =>
      recordAudit(tx, {
        actor: SYSTEM,
        action: "run.noted",
        subject: { type: "run", id: run.runId },
        data: { contentDigests: await storedContentDigests(tx, run.runId, ["code"]) },
      }),
    );
    expect(await verify(db, checkpoints)).toMatchObject({ ok: true, sealsChecked: 1, runsContentChecked: 1 });
    for (const [read, query] of Object.entries(READS)) {
      const unhandled = await unhandledDuring(async () => {
        const verification = verifyAuditChain(failingReads(db.prisma, query), { checkpoints, batchSize: 4 });
        await expect(verification, read).rejects.toThrow(`the read failed: ${query}`);
      });
      expect(unhandled, read).toEqual([]);
    }
  });

  it("ignores the failed reads of what it never checks after the first break", async () => {
    const { db, checkpoints, ids } = await freshLog();
    await tamper(db.prisma, `UPDATE "AuditEvent" SET data = '{"n": 999}' WHERE id = ${ids[1]}`);
    // The seal is in a later batch than the break: its tool calls are read ahead, as is the search
    // for unsealed ones, and both reads fail.
    for (const [read, query] of Object.entries(READS)) {
      const unhandled = await unhandledDuring(async () => {
        const report = await verifyAuditChain(failingReads(db.prisma, query), { checkpoints, batchSize: 4 });
        expect(report.broken, read).toMatchObject({ eventId: ids[1]!.toString(), reason: "hash_mismatch" });
      });
      expect(unhandled, read).toEqual([]);
    }
  });
});
