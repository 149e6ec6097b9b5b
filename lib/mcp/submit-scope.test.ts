/**
 * A token that may submit but not read runs (runs:submit alone), through the real server factory
 * and the SDK's Client on real PostgreSQL with the shipped policies: submit_run and call_tool
 * store the run and answer with it as submitted. They never fail with FORBIDDEN after the run was
 * stored, which would tell the agent that nothing happened.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import { isScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { appRuntime } from "@/lib/runs/runtime";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { createMcpServer } from "./server";

const system = { type: "system", name: "test" } as const;
let db: TestDatabase;
let client: Client;
let agentId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // Nothing executes: a run stays queued, so an answer that waited for it would take 10 s.
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_IN_PROCESS_WORKER: "false", AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-submit-scope-")) });
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) =>
    createAgent(tx, system, { name: "write-only", ownerEmail: "owner@example.com", scopes: ["runs:submit"] }),
  );
  const row = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  agentId = row.id;
  const server = createMcpServer({
    agent: { type: "agent", id: row.id, name: row.name, ownerId: row.ownerId, scopes: created.scopes.filter(isScope) },
    baseUrl: "http://localhost:3000",
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  client = new Client({ name: "write-only", version: "1" });
  await client.connect(clientSide);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await (await appRuntime(prisma())).close();
  await prisma().$disconnect();
  await db?.drop();
});

const answer = async (name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as { content: { text: string }[]; isError?: boolean };
  return JSON.parse(result.content[0]!.text) as Record<string, unknown>;
};

it("submit_run and call_tool answer with the stored run at once, never FORBIDDEN after storing it", async () => {
  const t0 = performance.now();
  const submitted = await answer("submit_run", { code: "return 42;", purpose: "write-only token", language: "javascript" });
  expect(submitted).toMatchObject({ status: "queued", decision: "allow" });
  expect(submitted).not.toHaveProperty("result");
  const direct = await answer("call_tool", { server: "ledger", tool: "listInvoices", arguments: { limit: 1 } });
  expect(direct).toMatchObject({ status: "queued" });
  expect(performance.now() - t0).toBeLessThan(8_000);
  const runs = await db.prisma.run.findMany({ where: { agentId }, select: { id: true, kind: true } });
  expect(runs.map((r) => r.id).sort()).toEqual([submitted.runId, direct.runId].sort());
  expect(await db.prisma.auditEvent.count({ where: { action: "auth.forbidden", actorId: agentId } })).toBe(0);
  // Reading a run is still refused to this token.
  expect(await answer("get_run", { runId: submitted.runId })).toMatchObject({ error: { code: "FORBIDDEN" } });
});
