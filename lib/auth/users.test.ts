import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser, signInWithPassword } from "./users";

const system: Actor = { type: "system", name: "test" };
const here = { address: "192.0.2.1" };
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: " Rita@Example.COM ", role: "reviewer", password: "correct horse battery" }));
});
afterAll(() => db?.drop());

describe("createUser", () => {
  it("normalizes the email and stores only an argon2id hash", async () => {
    const user = await db.prisma.user.findUniqueOrThrow({ where: { email: "rita@example.com" } });
    expect(user.passwordHash).toMatch(/^\$argon2id\$/);
    expect(user.passwordHash).not.toContain("correct horse");
  });

  it("refuses a duplicate, a short password, an unknown role, a name with a bidi character and an overlong address with typed errors", async () => {
    await expect(db.prisma.$transaction((tx) => createUser(tx, system, { email: "rita@example.com", role: "reviewer" }))).rejects.toMatchObject({
      code: "conflict",
    });
    await expect(db.prisma.$transaction((tx) => createUser(tx, system, { email: "x@example.com", role: "admin", password: "short" }))).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("password"),
    });
    await expect(db.prisma.$transaction((tx) => createUser(tx, system, { email: "y@example.com", role: "root" as never }))).rejects.toMatchObject({
      code: "bad_request",
    });
    // A name that reads as another (a bidi override), and an address past RFC 5321's bounds (its
    // local part became the name, past the name's own limit).
    for (const input of [
      { email: "z@example.com", name: "Rita \u202eadmin", role: "reviewer" as const },
      { email: `${"a".repeat(65)}@example.com`, role: "reviewer" as const },
    ]) {
      await expect(db.prisma.$transaction((tx) => createUser(tx, system, input))).rejects.toMatchObject({ code: "bad_request" });
    }
  });

  it("is refused to a person without agents:manage", async () => {
    const reviewer: Actor = { type: "user", id: "00000000-0000-0000-0000-000000000000", email: "r@x", role: "reviewer" };
    await expect(db.prisma.$transaction((tx) => createUser(tx, reviewer, { email: "z@example.com", role: "admin" }))).rejects.toMatchObject({
      code: "forbidden",
    });
    expect(await db.prisma.user.count({ where: { email: "z@example.com" } })).toBe(0);
  });

  it("audits the creation in the same transaction", async () => {
    const events = await db.prisma.auditEvent.findMany({ where: { action: "user.created" } });
    expect(events.map((e) => (e.data as { email: string }).email)).toContain("rita@example.com");
  });
});

describe("signInWithPassword", () => {
  it("accepts the right password, case-insensitively on the email, and audits it", async () => {
    const result = await signInWithPassword(db.prisma, "RITA@example.com", "correct horse battery", here);
    expect(result).toMatchObject({ ok: true, user: { email: "rita@example.com", role: "reviewer" } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({
      where: { action: "auth.login_succeeded" },
      orderBy: { id: "desc" },
    });
    expect(event.data).toMatchObject({ email: "rita@example.com" });
  });

  it("answers a wrong password and an unknown email the same way", async () => {
    expect(await signInWithPassword(db.prisma, "rita@example.com", "wrong", here)).toEqual({ ok: false, reason: "invalid_credentials" });
    expect(await signInWithPassword(db.prisma, "nobody@example.com", "wrong", here)).toEqual({ ok: false, reason: "invalid_credentials" });
    expect(await signInWithPassword(db.prisma, { not: "a string" }, "x", here)).toEqual({ ok: false, reason: "invalid_credentials" });
  });

  it("after 3 failures makes the next attempt from that address wait, even with the right password, and audits the refusal", async () => {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "target@example.com", role: "compliance", password: "the right password" }));
    const stranger = { address: "198.51.100.9" };
    for (let i = 0; i < 3; i++) {
      expect(await signInWithPassword(db.prisma, "target@example.com", `guess-${i}`, stranger)).toEqual({ ok: false, reason: "invalid_credentials" });
    }
    expect(await signInWithPassword(db.prisma, "target@example.com", "the right password", stranger)).toEqual({
      ok: false,
      reason: "rate_limited",
      retryAfterSeconds: 1,
    });
    const refused = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "auth.login_failed" }, orderBy: { id: "desc" } });
    expect(refused.data).toEqual({
      email: "target@example.com",
      address: "198.51.100.9",
      reason: "rate_limited",
      throttledBy: "account",
      retryAfterSeconds: 1,
    });
    // The refused attempt checked no password and is not a failure of its own.
    expect(await db.prisma.loginAttempt.count({ where: { email: "target@example.com" } })).toBe(3);
  });

  it("counts parallel guesses one at a time, so they cannot all slip under the limit", async () => {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "racer@example.com", role: "reviewer", password: "the right password" }));
    const racer = { address: "198.51.100.10" };
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => signInWithPassword(db.prisma, "racer@example.com", `guess-${i}`, racer)));
    expect(results.filter((r) => !r.ok && r.reason === "invalid_credentials")).toHaveLength(3);
    expect(results.filter((r) => !r.ok && r.reason === "rate_limited")).toHaveLength(7);
  });
});
