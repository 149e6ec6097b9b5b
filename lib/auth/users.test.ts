import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser, signInWithPassword } from "./users";

const system: Actor = { type: "system", name: "test" };
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

  it("refuses a duplicate, a short password and an unknown role with typed errors", async () => {
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
    const result = await signInWithPassword(db.prisma, "RITA@example.com", "correct horse battery");
    expect(result).toMatchObject({ ok: true, user: { email: "rita@example.com", role: "reviewer" } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({
      where: { action: "auth.login_succeeded" },
      orderBy: { id: "desc" },
    });
    expect(event.data).toMatchObject({ email: "rita@example.com" });
  });

  it("answers a wrong password and an unknown email the same way", async () => {
    expect(await signInWithPassword(db.prisma, "rita@example.com", "wrong")).toEqual({ ok: false, reason: "invalid_credentials" });
    expect(await signInWithPassword(db.prisma, "nobody@example.com", "wrong")).toEqual({ ok: false, reason: "invalid_credentials" });
    expect(await signInWithPassword(db.prisma, { not: "a string" }, "x")).toEqual({ ok: false, reason: "invalid_credentials" });
  });

  it("locks an account after 5 failures, even against the right password", async () => {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "target@example.com", role: "compliance", password: "the right password" }));
    for (let i = 0; i < 5; i++) {
      expect(await signInWithPassword(db.prisma, "target@example.com", `guess-${i}`)).toMatchObject({ ok: false });
    }
    expect(await signInWithPassword(db.prisma, "target@example.com", "the right password")).toEqual({
      ok: false,
      reason: "rate_limited",
    });
    const failures = await db.prisma.auditEvent.count({ where: { action: "auth.login_failed", data: { path: ["email"], equals: "target@example.com" } } });
    expect(failures).toBe(6);
  });

  it("counts parallel guesses one at a time, so they cannot all slip under the limit", async () => {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "racer@example.com", role: "reviewer", password: "the right password" }));
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => signInWithPassword(db.prisma, "racer@example.com", `guess-${i}`)));
    expect(results.filter((r) => !r.ok && r.reason === "invalid_credentials")).toHaveLength(5);
    expect(results.filter((r) => !r.ok && r.reason === "rate_limited")).toHaveLength(5);
  });
});
