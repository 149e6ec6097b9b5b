import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { authenticateAgentToken, createAgent, listAgents, revokeAgent } from "./agents";
import { hashAgentToken } from "./tokens";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser } from "./users";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
});
afterAll(() => db?.drop());

describe("agents and tokens", () => {
  it("returns the token once and stores only its hash", async () => {
    const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "ledger-bot", ownerEmail: "owner@example.com" }));
    expect(created.token).toMatch(/^alk_[A-Za-z0-9_-]{43}$/);
    const row = await db.prisma.agentToken.findFirstOrThrow({ where: { agentId: created.agentId } });
    expect(row.tokenHash).toBe(hashAgentToken(created.token));
    expect(JSON.stringify(row)).not.toContain(created.token);
    const listed = await listAgents(db.prisma);
    expect(JSON.stringify(listed)).not.toContain(created.token);
    expect(listed.find((a) => a.name === "ledger-bot")?.tokens[0]?.prefix).toBe(created.token.slice(0, 10));
  });

  it("authenticates a valid token as that agent with its scopes, and records last use", async () => {
    const { token, agentId } = await db.prisma.$transaction((tx) =>
      createAgent(tx, system, { name: "reader", ownerEmail: "owner@example.com", scopes: ["runs:read"] }),
    );
    const actor = await authenticateAgentToken(db.prisma, token);
    expect(actor).toMatchObject({ type: "agent", id: agentId, name: "reader", scopes: ["runs:read"] });
    const row = await db.prisma.agentToken.findFirstOrThrow({ where: { agentId } });
    expect(row.lastUsedAt).not.toBeNull();
  });

  it("refuses unknown, malformed, expired and revoked tokens alike", async () => {
    expect(await authenticateAgentToken(db.prisma, "alk_" + "A".repeat(43))).toBeNull();
    expect(await authenticateAgentToken(db.prisma, "Bearer nonsense")).toBeNull();

    const expired = await db.prisma.$transaction((tx) =>
      createAgent(tx, system, { name: "old", ownerEmail: "owner@example.com", expiresAt: new Date(Date.now() + 60_000) }),
    );
    await db.prisma.agentToken.updateMany({ where: { agentId: expired.agentId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await authenticateAgentToken(db.prisma, expired.token)).toBeNull();

    const revoked = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "gone", ownerEmail: "owner@example.com" }));
    expect(await authenticateAgentToken(db.prisma, revoked.token)).not.toBeNull();
    const result = await db.prisma.$transaction((tx) => revokeAgent(tx, system, "gone"));
    expect(result.revokedTokens).toBe(1);
    expect(await authenticateAgentToken(db.prisma, revoked.token)).toBeNull();
  });

  it("gives clear errors: unknown owner, duplicate name, bad name, a scope twice, revoking twice", async () => {
    const attempt = (input: Parameters<typeof createAgent>[2]) => db.prisma.$transaction((tx) => createAgent(tx, system, input));
    await expect(attempt({ name: "x", ownerEmail: "nobody@example.com" })).rejects.toMatchObject({ code: "not_found" });
    await expect(attempt({ name: "ledger-bot", ownerEmail: "owner@example.com" })).rejects.toMatchObject({ code: "conflict" });
    await expect(attempt({ name: "Bad Name!", ownerEmail: "owner@example.com" })).rejects.toMatchObject({ code: "bad_request" });
    await expect(attempt({ name: "y", ownerEmail: "owner@example.com", scopes: ["audit:read" as never] })).rejects.toMatchObject({
      code: "bad_request",
    });
    await expect(attempt({ name: "z", ownerEmail: "owner@example.com", scopes: ["runs:read", "runs:read"] })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("lists a scope more than once"),
    });
    await expect(db.prisma.$transaction((tx) => revokeAgent(tx, system, "gone"))).rejects.toMatchObject({ code: "conflict" });
    await expect(db.prisma.$transaction((tx) => revokeAgent(tx, system, "never"))).rejects.toMatchObject({ code: "not_found" });
  });

  it("audits creation, token issue and revocation", async () => {
    const actions = (await db.prisma.auditEvent.findMany({ select: { action: true } })).map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(["agent.created", "agent_token.created", "agent.revoked"]));
  });
});
