import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { canonicalJson } from "@/lib/canonical-json";
import { chainHash, GENESIS_HASH, recordAudit } from "./record";

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

  it("cannot be rewritten: the table refuses UPDATE and DELETE", async () => {
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "AuditEvent" SET action = 'forged'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`DELETE FROM "AuditEvent"`)).rejects.toThrow(/append-only/);
  });
});
