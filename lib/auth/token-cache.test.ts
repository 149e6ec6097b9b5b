/**
 * Remembered agent tokens on a real PostgreSQL: an accepted token is recalled without a read, and
 * forgotten as soon as anything that decides it changes, by whatever path (the service, raw SQL,
 * a deleted row), when the listening connection is lost, when it expires and after MAX_AGE_MS; a
 * read that raced a change is never remembered; a refused token never is.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { authenticateAgentToken, createAgent, revokeAgent } from "./agents";
import { listenTokenChanges, MAX_AGE_MS, type TokenCache } from "./token-cache";
import { hashAgentToken } from "./tokens";
import { createUser } from "./users";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let cache: TokenCache;
let agents = 0;

async function newAgent(options: { expiresAt?: Date } = {}) {
  const name = `cached-${++agents}`;
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com", ...options }));
  return { ...created, name, hash: hashAgentToken(created.token) };
}

const listenerPids = () =>
  db.prisma.$queryRaw<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE application_name = 'airlock-auth-changes' AND query ILIKE 'LISTEN%'`;

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Authenticates through the cache and proves the token is now remembered. */
async function accepted(token: string, hash: string) {
  const actor = await authenticateAgentToken(db.prisma, token, cache);
  expect(actor).not.toBeNull();
  expect(cache.recall(hash, new Date())).toBeDefined();
  return actor!;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
  cache = listenTokenChanges(db.url);
  await until(() => cache.epoch() !== null, "the listener is up");
}, 60_000);

afterAll(async () => {
  await cache?.close();
  await db?.drop();
});

describe("remembered agent tokens", () => {
  it("an accepted token is recalled without reading it: a change the trigger does not announce (its last use) keeps it", async () => {
    const agent = await newAgent();
    const actor = await accepted(agent.token, agent.hash);
    expect(actor).toMatchObject({ type: "agent", name: agent.name });
    const lastUse = new Date(Date.now() - 1_000);
    await db.prisma.agentToken.updateMany({ where: { agentId: agent.agentId }, data: { lastUsedAt: lastUse } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(cache.recall(agent.hash, new Date())).toBeDefined();
    // A recalled token is neither read nor written: its last use (refreshed once a minute) is as the row has it.
    for (let i = 0; i < 3; i++) expect(await authenticateAgentToken(db.prisma, agent.token, cache)).not.toBeNull();
    expect((await db.prisma.agentToken.findFirstOrThrow({ where: { agentId: agent.agentId } })).lastUsedAt).toEqual(lastUse);
    // The answer is a copy: a caller changing it changes nothing remembered.
    (actor.scopes as string[]).push("admin:everything");
    expect((await authenticateAgentToken(db.prisma, agent.token, cache))!.scopes).not.toContain("admin:everything");
  });

  it("attack: a revoked agent's remembered token is refused once the revocation commits, through the service", async () => {
    const agent = await newAgent();
    await accepted(agent.token, agent.hash);
    await db.prisma.$transaction((tx) => revokeAgent(tx, system, agent.name));
    await until(async () => (await authenticateAgentToken(db.prisma, agent.token, cache)) === null, "the revoked token is refused", 2_000);
  });

  it("attack: a token revoked, narrowed or deleted in SQL (no service involved) is forgotten too", async () => {
    const revoked = await newAgent();
    await accepted(revoked.token, revoked.hash);
    await db.prisma.$executeRaw`UPDATE "AgentToken" SET "revokedAt" = now() WHERE "tokenHash" = ${revoked.hash}`;
    await until(async () => (await authenticateAgentToken(db.prisma, revoked.token, cache)) === null, "the token revoked in SQL is refused", 2_000);

    const narrowed = await newAgent();
    await accepted(narrowed.token, narrowed.hash);
    await db.prisma.$executeRaw`UPDATE "AgentToken" SET scopes = ARRAY['runs:read'] WHERE "tokenHash" = ${narrowed.hash}`;
    await until(
      async () => (await authenticateAgentToken(db.prisma, narrowed.token, cache))?.scopes.join() === "runs:read",
      "the narrowed scopes are seen",
      2_000,
    );

    const deleted = await newAgent();
    await accepted(deleted.token, deleted.hash);
    await db.prisma.$executeRaw`DELETE FROM "AgentToken" WHERE "tokenHash" = ${deleted.hash}`;
    await until(async () => (await authenticateAgentToken(db.prisma, deleted.token, cache)) === null, "the deleted token is refused", 2_000);
  });

  it("the trigger is what forgets: with it disabled a revocation in SQL would be served from memory", async () => {
    const agent = await newAgent();
    await accepted(agent.token, agent.hash);
    await db.prisma.$executeRawUnsafe(`ALTER TABLE "AgentToken" DISABLE TRIGGER "AgentToken_auth_changed_update"`);
    try {
      await db.prisma.$executeRaw`UPDATE "AgentToken" SET "revokedAt" = now() WHERE "tokenHash" = ${agent.hash}`;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await authenticateAgentToken(db.prisma, agent.token, cache)).not.toBeNull();
    } finally {
      await db.prisma.$executeRawUnsafe(`ALTER TABLE "AgentToken" ENABLE TRIGGER "AgentToken_auth_changed_update"`);
      await db.prisma.$executeRaw`SELECT pg_notify('airlock_auth_changed', '')`;
    }
    await until(async () => (await authenticateAgentToken(db.prisma, agent.token, cache)) === null, "the revoked token is refused", 2_000);
  });

  it("a read that began before a change is not remembered, and a refused token never is", async () => {
    const agent = await newAgent();
    const since = cache.epoch();
    expect(since).not.toBeNull();
    // Any announcement counts, a forged one included: it can only make the next request read again.
    await db.prisma.$executeRaw`SELECT pg_notify('airlock_auth_changed', 'forged')`;
    await until(() => cache.epoch()?.changes !== since!.changes, "the announcement arrives");
    cache.remember(since, agent.hash, {
      actor: { type: "agent", id: agent.agentId, name: agent.name, ownerId: "", scopes: [] },
      tokenId: "x",
      expiresAt: null,
      lastUsedAt: null,
    });
    expect(cache.recall(agent.hash, new Date())).toBeUndefined();

    expect(await authenticateAgentToken(db.prisma, "alk_" + "B".repeat(43), cache)).toBeNull();
    expect(cache.recall(hashAgentToken("alk_" + "B".repeat(43)), new Date())).toBeUndefined();
  });

  it("nothing is used at or past the token's expiry, nor MAX_AGE_MS after it was read", async () => {
    const agent = await newAgent({ expiresAt: new Date(Date.now() + 60_000) });
    await accepted(agent.token, agent.hash);
    expect(cache.recall(agent.hash, new Date(Date.now() + 60_000))).toBeUndefined();
    await accepted(agent.token, agent.hash);
    expect(cache.recall(agent.hash, new Date(Date.now() + MAX_AGE_MS))).toBeUndefined();
  });

  it("a lost listening connection forgets everything and remembers nothing until it is back", async () => {
    const agent = await newAgent();
    await accepted(agent.token, agent.hash);
    const [listener] = await listenerPids();
    await db.prisma.$executeRaw`SELECT pg_terminate_backend(${listener!.pid}::int)`;
    await until(() => cache.epoch() === null, "the loss is seen");
    expect(cache.recall(agent.hash, new Date())).toBeUndefined();
    expect(await authenticateAgentToken(db.prisma, agent.token, cache)).not.toBeNull();
    expect(cache.recall(agent.hash, new Date())).toBeUndefined();
    await until(() => cache.epoch() !== null, "the listener is back");
    await accepted(agent.token, agent.hash);
  });
});
