/**
 * Rejected bearer tokens are audited per prefix and minute under a global cap, on real
 * PostgreSQL: a flood cannot grow the audit chain faster than the bounds, and no count is lost.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { createAgent, revokeAgent } from "./agents";
import type { Actor } from "@/lib/contracts/scopes";
import { createTokenRejectionLog, type TokenRejectionLog } from "./token-rejections";
import { createUser } from "./users";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
});
afterAll(() => db?.drop());

/** A token of the right shape that no agent holds, with a chosen 10-character prefix. */
function fakeToken(prefix = `alk_${randomBytes(6).toString("base64url").slice(0, 6)}`): string {
  return (
    prefix +
    randomBytes(40)
      .toString("base64url")
      .slice(0, 43 - (prefix.length - 4))
  );
}

async function rejectedEvents(prefix?: string) {
  const events = await db.prisma.auditEvent.findMany({
    where: { action: "auth.token_rejected", ...(prefix ? { subjectId: prefix } : {}) },
    orderBy: { id: "asc" },
  });
  return events.map((e) => ({ ...e, data: e.data as { prefix: string; reason: string; attempts: number; since: string } }));
}

/** A clock the test moves; the log never reads the real one. */
function clock(start = Date.UTC(2026, 0, 5, 10, 0, 5)) {
  let at = start;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

function newLog(time: ReturnType<typeof clock>, cap?: number): TokenRejectionLog {
  return createTokenRejectionLog({ db: () => db.prisma, now: time.now, cap, timer: false });
}

describe("auth.token_rejected", () => {
  it("turns a flood of 200 bad tokens with one prefix in one minute into one event, and the count into one more after the minute", async () => {
    const time = clock();
    const log = newLog(time);
    const prefix = "alk_FLOOD1";
    const tokens = Array.from({ length: 200 }, () => fakeToken(prefix));
    expect(tokens.every((t) => t.startsWith(prefix) && t.length === 47)).toBe(true);
    await Promise.all(tokens.slice(0, 100).map((t) => log.reject(t)));
    for (const t of tokens.slice(100)) {
      time.advance(200); // 20 s more, still the same minute
      await log.reject(t);
    }
    await log.flush(); // nothing to flush while the minute lasts
    let events = await rejectedEvents(prefix);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: "system", actorId: "auth", subjectType: "token_prefix", subjectId: prefix });
    expect(events[0]!.data).toMatchObject({ prefix, reason: "unknown", attempts: 1 });

    time.advance(60_000);
    await log.flush();
    events = await rejectedEvents(prefix);
    expect(events).toHaveLength(2);
    expect(events[1]!.data).toMatchObject({ prefix, reason: "unknown", attempts: 199 });
    expect(events.reduce((sum, e) => sum + e.data.attempts, 0)).toBe(200);
    // Never the token, nor more of it than the prefix.
    const written = JSON.stringify(events.map((e) => [e.subjectId, e.data]));
    for (const t of tokens) expect(written).not.toContain(t.slice(0, 14));

    await log.flush();
    expect(await rejectedEvents(prefix)).toHaveLength(2);
  });

  it("writes at most one event per prefix per minute: a prefix that goes on carries its count into the next minute's event", async () => {
    const time = clock(Date.UTC(2026, 0, 6, 9, 0, 0));
    const log = newLog(time);
    const prefix = "alk_STEADY";
    for (let minute = 0; minute < 3; minute++) {
      for (let i = 0; i < 10; i++) {
        await log.reject(fakeToken(prefix));
        time.advance(5_000);
      }
      time.advance(10_000);
    }
    let events = await rejectedEvents(prefix);
    expect(events.map((e) => e.data.attempts)).toEqual([1, 10, 10]);
    time.advance(60_000);
    await log.flush();
    events = await rejectedEvents(prefix);
    expect(events.map((e) => e.data.attempts)).toEqual([1, 10, 10, 9]);
    expect(events[1]!.data.since).toBe(new Date(Date.UTC(2026, 0, 6, 9, 0, 5)).toISOString());
  });

  it("caps all prefixes together per minute and writes what went over the cap as one `*` event", async () => {
    const time = clock(Date.UTC(2026, 0, 7, 8, 0, 0));
    const log = newLog(time, 20);
    const before = (await rejectedEvents()).length;
    await Promise.all(Array.from({ length: 200 }, () => log.reject(fakeToken())));
    let events = (await rejectedEvents()).slice(before);
    expect(events).toHaveLength(20);
    expect(events.every((e) => e.data.attempts === 1)).toBe(true);
    time.advance(60_000);
    await log.flush();
    events = (await rejectedEvents()).slice(before);
    expect(events).toHaveLength(21);
    expect(events[20]).toMatchObject({ subjectId: "*", data: { prefix: "*", reason: "over_cap", attempts: 180 } });
  });

  it("names why a token was refused: revoked, expired, or not an agent token at all (without writing any of it)", async () => {
    const time = clock(Date.UTC(2026, 0, 8, 7, 0, 0));
    const log = newLog(time);
    const revoked = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "gone", ownerEmail: "owner@example.com" }));
    await db.prisma.$transaction((tx) => revokeAgent(tx, system, "gone"));
    const expired = await db.prisma.$transaction((tx) =>
      createAgent(tx, system, { name: "stale", ownerEmail: "owner@example.com", expiresAt: new Date(Date.now() + 60_000) }),
    );
    await db.prisma.agentToken.updateMany({ where: { agentId: expired.agentId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await log.reject(revoked.token);
    await log.reject(expired.token);
    await log.reject("ghp_someOtherSystemsSecret1234567890");
    await log.reject("ghp_anotherForeignSecret0987654321");
    expect((await rejectedEvents(revoked.token.slice(0, 10)))[0]!.data.reason).toBe("agent_revoked");
    expect((await rejectedEvents(expired.token.slice(0, 10)))[0]!.data.reason).toBe("expired");
    const malformed = await rejectedEvents("malformed");
    expect(malformed).toHaveLength(1);
    expect(malformed[0]!.data).toMatchObject({ prefix: "malformed", reason: "malformed", attempts: 1 });
    const written = JSON.stringify((await rejectedEvents()).map((e) => [e.subjectId, e.data]));
    expect(written).not.toContain("ghp_");
    expect(written).not.toContain(revoked.token);
  });

  it("is what /api/mcp reports a refused bearer token to", async () => {
    setEnvForChildren({ DATABASE_URL: db.url });
    const time = clock(Date.UTC(2026, 0, 9, 6, 0, 0));
    const cache = globalThis as typeof globalThis & { __airlockTokenRejections?: TokenRejectionLog };
    cache.__airlockTokenRejections = newLog(time);
    const { handleMcpRequest } = await import("@/lib/mcp/http");
    const prefix = "alk_HTTP01";
    const send = (authorization?: string) =>
      handleMcpRequest(
        new Request("http://localhost/api/mcp", {
          method: "POST",
          headers: {
            host: "localhost",
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...(authorization ? { authorization } : {}),
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        }),
      );
    const responses = await Promise.all(Array.from({ length: 50 }, () => send(`Bearer ${fakeToken(prefix)}`)));
    expect(responses.every((r) => r.status === 401)).toBe(true);
    expect((await send()).status).toBe(401); // no token at all: nothing to record
    expect(await rejectedEvents(prefix)).toHaveLength(1);
    time.advance(60_000);
    await cache.__airlockTokenRejections.flush();
    expect((await rejectedEvents(prefix)).map((e) => e.data.attempts)).toEqual([1, 49]);
  });
});
