/**
 * The background sequencer on a real PostgreSQL: events this process commits are chained soon
 * after their commit, what another process stages is chained within IDLE_MS, and a quiet process
 * asks the database about once a second, not ten times. A backlog of search documents is built a
 * small batch per pass, one pass right after another, and `close` waits for one batch, not for the
 * whole backlog.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { AFTER_STAGING_MS, DOCUMENTS_PER_PASS, IDLE_MS, startAuditSequencer } from "./sequencer";
import { recordAudit } from "./record";

let db: TestDatabase;
const actor = { type: "system", name: "test" } as const;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** Staged events not chained yet, read without chaining them first (a raw read of the staging table). */
const staged = async () => Number((await db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "AuditPending"`)[0]!.n);

it("chains this process's events right after their commit, another's within IDLE_MS, and idles at one pass a second", async () => {
  let passes = 0;
  // The sequencer's database, counting its passes (each starts with one airlock_audit_sequence call).
  const counted = new Proxy(db.prisma, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== "$queryRaw" || typeof value !== "function") return value;
      return (strings: TemplateStringsArray, ...values: unknown[]) => {
        if (strings.join("?").includes("airlock_audit_sequence")) passes++;
        return (value as (...args: unknown[]) => unknown).call(target, strings, ...values);
      };
    },
  });
  const sequencer = startAuditSequencer(counted);
  try {
    // Quiet: over 2.5 s, about one pass a second (ten a second would be 25).
    await expect.poll(() => passes, { timeout: 2_000, interval: 10 }).toBeGreaterThan(0);
    const quietFrom = passes;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(passes - quietFrom).toBeLessThanOrEqual(4);

    // Another process's event (staged by hand, so this process's cue never fires) is chained by an idle pass.
    await db.prisma.$executeRaw`
      INSERT INTO "AuditPending" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "canonical")
      SELECT now(), 'system', 'elsewhere', 'test.elsewhere', 'thing', NULL, '{}'::jsonb, '{}'`;
    expect(await staged()).toBe(1);
    await expect.poll(staged, { timeout: IDLE_MS + 1_500, interval: 20 }).toBe(0);

    // Right after a pass, the next idle one is a second away: an event this process commits is chained well before it.
    const before = passes;
    await expect.poll(() => passes, { timeout: IDLE_MS + 1_000, interval: 5 }).toBeGreaterThan(before);
    await db.prisma.$transaction((tx) => recordAudit(tx, { actor, action: "test.local", subject: { type: "thing", id: "1" } }));
    const committed = Date.now();
    await expect.poll(staged, { timeout: IDLE_MS, interval: 5 }).toBe(0);
    expect(Date.now() - committed).toBeLessThan(AFTER_STAGING_MS + 400);
  } finally {
    await sequencer.close();
  }
}, 20_000);

it("works off a backlog of search documents a batch per pass, and closes after one batch", async () => {
  const owner = await db.prisma.user.create({ data: { email: "backlog@example.com", name: "Backlog", role: "admin" } });
  const agent = await db.prisma.agent.create({ data: { name: "backlog-bot", ownerId: owner.id } });
  const backlog = DOCUMENTS_PER_PASS * 10;
  // Settled runs whose documents are owed, as a bulk import leaves them.
  await db.prisma.$executeRaw`
    INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", "updatedAt")
    SELECT gen_random_uuid(), ${agent.id}::uuid, 'succeeded', 'javascript', 'return ' || i || ';', 'x', 'imported run ' || i, 'x', 'backlog-' || i, now()
    FROM generate_series(1, ${backlog}::integer) AS i`;
  const owed = async () => Number((await db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "Run" WHERE "searchVector" IS NULL`)[0]!.n);
  expect(await owed()).toBe(backlog);

  // Closed right after its first pass, the sequencer has built whole batches, and far from all of them.
  const first = startAuditSequencer(db.prisma);
  await expect.poll(owed, { timeout: 5_000, interval: 5 }).toBeLessThan(backlog);
  await first.close();
  const left = await owed();
  expect((backlog - left) % DOCUMENTS_PER_PASS).toBe(0);
  expect(left).toBeGreaterThanOrEqual(backlog - 3 * DOCUMENTS_PER_PASS);

  // Left running, it follows a full batch with the next at once, not IDLE_MS later: the rest is
  // built in well under the time that many idle passes would take.
  const second = startAuditSequencer(db.prisma);
  const started = Date.now();
  try {
    await expect.poll(owed, { timeout: 20_000, interval: 20 }).toBe(0);
    expect(Date.now() - started).toBeLessThan(((left / DOCUMENTS_PER_PASS) * IDLE_MS) / 2);
  } finally {
    await second.close();
  }
}, 30_000);
