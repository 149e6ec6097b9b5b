/**
 * The console's doors audit refusals and sign-outs, on real PostgreSQL: a signed-in person refused
 * by a server action (the userAction wrapper) or a page (userPage) leaves `auth.forbidden
 * {scope, door}`; a sign-out leaves `auth.signed_out`. Only next-auth's session lookup is faked.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser, endSessions } from "./users";

const session = vi.hoisted(() => ({ userId: null as string | null }));
vi.mock("@/lib/auth/next-auth", () => ({ auth: async () => (session.userId ? { user: { id: session.userId }, sessionVersion: 0 } : null) }));

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let compliance: { id: string };
let reviewer: { id: string };

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
  compliance = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "compliance@example.com", role: "compliance" }));
  reviewer = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "reviewer@example.com", role: "reviewer" }));
});
beforeEach(() => {
  session.userId = null;
});
afterAll(async () => {
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

const forbiddenEvents = (actorId: string) => db.prisma.auditEvent.findMany({ where: { action: "auth.forbidden", actorId }, orderBy: { id: "asc" } });

describe("console refusals", () => {
  it("a server action refused for a missing scope records auth.forbidden with the scope and door, and still answers forbidden", async () => {
    const { userAction } = await import("./user-action");
    const handler = vi.fn(async () => "done");
    const action = userAction("agents:manage", z.object({}).strict(), handler);
    session.userId = compliance.id;
    const result = await action({});
    expect(result).toMatchObject({ ok: false, error: { code: "forbidden", status: 403 } });
    expect(handler).not.toHaveBeenCalled();
    const events = await forbiddenEvents(compliance.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: "user", subjectType: "user", subjectId: compliance.id, data: { scope: "agents:manage", door: "action" } });
  });

  it("a refusal by the service itself (not the scope) is recorded with its reason; other failures are not", async () => {
    const { AppError } = await import("@/lib/errors");
    const { userAction } = await import("./user-action");
    session.userId = reviewer.id;
    const ownRun = userAction(
      "runs:review",
      z.object({}).strict(),
      async () => {
        throw new AppError("forbidden", "You own the agent.", { details: { reason: "own_agent" } });
      },
      { door: "api:/api/queue/decision" },
    );
    expect(await ownRun({})).toMatchObject({ ok: false, error: { code: "forbidden" } });
    const conflict = userAction("runs:review", z.object({}).strict(), async () => {
      throw new AppError("conflict", "Already decided.");
    });
    expect(await conflict({})).toMatchObject({ ok: false, error: { code: "conflict" } });
    const badInput = userAction("agents:manage", z.object({ name: z.string() }).strict(), async () => "never");
    expect(await badInput({})).toMatchObject({ ok: false, error: { code: "bad_request" } });
    expect((await forbiddenEvents(reviewer.id)).map((e) => e.data)).toEqual([{ scope: null, door: "api:/api/queue/decision", reason: "own_agent" }]);
  });

  it("an anonymous caller is refused as unauthorized and records nothing", async () => {
    const { userAction } = await import("./user-action");
    const before = await db.prisma.auditEvent.count({ where: { action: "auth.forbidden" } });
    const result = await userAction("agents:manage", z.object({}).strict(), async () => "never")({});
    expect(result).toMatchObject({ ok: false, error: { code: "unauthorized" } });
    expect(await db.prisma.auditEvent.count({ where: { action: "auth.forbidden" } })).toBe(before);
  });

  it("a page the person's role does not open records auth.forbidden before the 403", async () => {
    const { userPage } = await import("./user-route");
    vi.stubEnv("__NEXT_EXPERIMENTAL_AUTH_INTERRUPTS", "true"); // next.config.js: experimental.authInterrupts
    session.userId = reviewer.id;
    const before = (await forbiddenEvents(reviewer.id)).length;
    const render = async (user: { id: string }) => user.id;
    await expect(userPage("audit:read", render)({})).rejects.toThrow("NEXT_HTTP_ERROR_FALLBACK;403");
    await expect(userPage("runs:read", render)({})).resolves.toBe(reviewer.id);
    const events = (await forbiddenEvents(reviewer.id)).slice(before);
    expect(events.map((e) => e.data)).toEqual([{ scope: "audit:read", door: "page" }]);
  });
});

describe("auth.signed_out", () => {
  it("is recorded by the person who signed out; an unknown or malformed session id records nothing", async () => {
    const other = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "leaving@example.com", role: "reviewer" }));
    expect(await endSessions(db.prisma, other.id, 0)).toBe(true);
    expect(await endSessions(db.prisma, "00000000-0000-4000-8000-000000000000", 0)).toBe(false);
    expect(await endSessions(db.prisma, "not-a-uuid", 0)).toBe(false);
    const events = await db.prisma.auditEvent.findMany({ where: { action: "auth.signed_out" } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      actorType: "user",
      actorId: other.id,
      subjectType: "user",
      subjectId: other.id,
      data: { email: "leaving@example.com" },
    });
  });
});
