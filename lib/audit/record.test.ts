import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { canonicalJson } from "@/lib/canonical-json";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { chainHash, GENESIS_HASH, recordAudit } from "./record";
import { verifyAuditChain } from "./verify";

let db: TestDatabase;
const actor = { type: "system", name: "test" } as const;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops undefined", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: undefined, x: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"x":0,"z":1}]},"b":1}');
  });
});

describe("recordAudit", () => {
  it("chains events: each hash covers the previous hash and the event", async () => {
    await db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.one", subject: { type: "thing", id: "1" }, data: { n: 1 } }));
    await db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.two", subject: { type: "thing" } }));
    const events = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
    let prev = GENESIS_HASH;
    for (const event of events) {
      expect(event.prevHash).toBe(prev);
      expect(event.hash).toBe(chainHash(prev, event));
      prev = event.hash;
    }
    expect(events.length).toBeGreaterThanOrEqual(2);
  });

  it("keeps one chain under concurrent appends", async () => {
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.concurrent", subject: { type: "thing", id: String(i) } })),
      ),
    );
    const events = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
    const prevHashes = new Set(events.map((e) => e.prevHash));
    expect(prevHashes.size).toBe(events.length); // no fork: no two events share a predecessor
  });

  it("hashes in the database exactly as chainHash does, for any text", async () => {
    const data = { name: "Zoë 🦊 \u200b 日本", nested: { z: [1.5, -0, 1e21, null, true], a: '\u2028"\\' } };
    await db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.unicode", subject: { type: "thing", id: "é" }, data }));
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "test.unicode" } });
    expect(event.hash).toBe(chainHash(event.prevHash, event));
    expect(event.data).toEqual(JSON.parse(canonicalJson(data)));
  });

  it("stages without a lock: a transaction that has recorded an event does not hold up another one's commit", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let recorded!: () => void;
    const firstRecorded = new Promise<void>((resolve) => (recorded = resolve));
    const first = db.prisma.$transaction(
      async (tx) => {
        await recordAudit(tx, { actor, action: "test.held_open", subject: { type: "thing" } });
        recorded();
        await held;
      },
      { timeout: 20_000 },
    );
    await firstRecorded;
    const t0 = performance.now();
    await db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.not_held_up", subject: { type: "thing" } }));
    const waited = performance.now() - t0;
    // The second event is chained and readable while the first transaction is still open.
    expect(await db.prisma.auditEvent.count({ where: { action: "test.not_held_up" } })).toBe(1);
    expect(await db.prisma.auditEvent.count({ where: { action: "test.held_open" } })).toBe(0);
    release();
    await first;
    expect(await db.prisma.auditEvent.count({ where: { action: "test.held_open" } })).toBe(1);
    expect(waited).toBeLessThan(5_000);
  });

  it("chains a large burst in batches, one chain, in staging order", async () => {
    const before = await db.prisma.auditEvent.count();
    await db.prisma.$executeRawUnsafe(`
      INSERT INTO "AuditPending" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "canonical")
      SELECT now(), 'system', 'test', 'test.burst', 'thing', i::text, jsonb_build_object('i', i), ''
      FROM generate_series(1, 2500) i`);
    expect(await sequenceAudit(db.prisma)).toBe(2500);
    expect(await db.prisma.auditEvent.count()).toBe(before + 2500);
    const burst = await db.prisma.auditEvent.findMany({ where: { action: "test.burst" }, orderBy: { id: "asc" }, select: { subjectId: true } });
    expect(burst.map((e) => Number(e.subjectId))).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
    expect(await db.prisma.$queryRawUnsafe(`SELECT count(*)::int AS n FROM "AuditPending"`)).toEqual([{ n: 0 }]);
  });

  it("rolls back with the transaction it belongs to", async () => {
    const before = await db.prisma.auditEvent.count();
    await expect(
      db.prisma.$transaction(async (tx) => {
        await recordAudit(tx, { actor, action: "test.rolled_back", subject: { type: "thing" } });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(await db.prisma.auditEvent.count()).toBe(before);
  });

  it("a staged event whose canonical text lies about its fields is chained, and verification names it", async () => {
    const fresh = await createTestDatabase();
    try {
      await fresh.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.honest", subject: { type: "thing" } }));
      // Stage directly, as a compromised app could: the hash covers an approval, the row says a denial.
      const at = new Date();
      const claimed = { at, actorType: "system", actorId: "test", action: "run.approved", subjectType: "run", subjectId: "r1", data: {} };
      await fresh.prisma.$executeRaw`
        INSERT INTO "AuditPending" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "canonical")
        VALUES (${at.toISOString()}::timestamptz, 'system', 'test', 'run.denied', 'run', 'r1', '{}'::jsonb,
                ${canonicalJson({ ...claimed, at: at.toISOString() })})`;
      const report = await verifyAuditChain(fresh.prisma, { checkpoints: null });
      expect(report.ok).toBe(false);
      const forged = await fresh.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.denied" } });
      expect(report.broken?.eventId).toBe(forged.id.toString());
    } finally {
      await fresh.drop();
    }
  });

  it("cannot be rewritten: the table refuses UPDATE and DELETE", async () => {
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "AuditEvent" SET action = 'forged'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`DELETE FROM "AuditEvent"`)).rejects.toThrow(/append-only/);
    await expect(
      db.prisma.$transaction(async (tx) => {
        await recordAudit(tx, { actor, action: "test.staged", subject: { type: "thing" } });
        await tx.$executeRawUnsafe(`UPDATE "AuditPending" SET action = 'forged'`);
      }),
    ).rejects.toThrow(/append-only/);
  });
});
