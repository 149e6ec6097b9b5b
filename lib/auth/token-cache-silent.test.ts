/**
 * A listening connection that dies silently (its backend stops answering, the socket stays open:
 * a network partition, a failover that resets nothing) must not keep remembered tokens in use.
 * Simulated by stopping the listener's backend process (SIGSTOP; needs the server on this host).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { authenticateAgentToken, createAgent } from "./agents";
import { listenTokenChanges, type TokenCache } from "./token-cache";
import { hashAgentToken } from "./tokens";
import { createUser } from "./users";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let cache: TokenCache;
let stopped: number | null = null;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
  cache = listenTokenChanges(db.url);
  const deadline = Date.now() + 5_000;
  while (cache.epoch() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}, 60_000);

afterAll(async () => {
  if (stopped !== null) process.kill(stopped, "SIGCONT");
  await cache?.close();
  await db?.drop();
});

it("attack: a token revoked while the listening connection is silently dead is refused within seconds, not after MAX_AGE_MS", async () => {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "silent", ownerEmail: "owner@example.com" }));
  expect(await authenticateAgentToken(db.prisma, created.token, cache)).not.toBeNull();
  const [listener] = await db.prisma.$queryRaw<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity WHERE application_name = 'airlock-auth-changes' AND datname = current_database()`;
  stopped = listener!.pid;
  process.kill(stopped, "SIGSTOP");
  await db.prisma.$executeRaw`UPDATE "AgentToken" SET "revokedAt" = now() WHERE "tokenHash" = ${hashAgentToken(created.token)}`;
  const deadline = Date.now() + 15_000;
  let accepted = true;
  while (accepted && Date.now() < deadline) {
    accepted = (await authenticateAgentToken(db.prisma, created.token, cache)) !== null;
    if (accepted) await new Promise((r) => setTimeout(r, 200));
  }
  process.kill(stopped, "SIGCONT");
  stopped = null;
  expect(accepted, "the revoked token was still accepted 15 s after its revocation committed").toBe(false);
}, 60_000);
