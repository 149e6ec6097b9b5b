/**
 * Every script the README shows (its ```ts blocks) runs as written: submitted by an agent through
 * the real MCP server under the default policy, against the demo ledger, in a strict sandbox, and
 * it succeeds. A README edit that breaks an example, or a change that breaks what the README
 * promises, fails here instead of in a new user's first minutes.
 */
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import { isScope, type Actor } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { createMcpServer } from "@/lib/mcp/server";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { appRuntime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const scripts = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let client: Client;

type RunView = { runId: string; status: string; result?: unknown; error?: unknown; findings?: unknown };

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_IN_PROCESS_WORKER: "true", AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-readme-")) });
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "reader", ownerEmail: "owner@example.com" }));
  const row = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  const agent: AgentActor = { type: "agent", id: row.id, name: row.name, ownerId: row.ownerId, scopes: created.scopes.filter(isScope) };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ agent, baseUrl: "http://localhost:3000" }).connect(serverSide);
  client = new Client({ name: "readme", version: "1" });
  await client.connect(clientSide);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await (await appRuntime(prisma())).close();
  await prisma().$disconnect();
  await db?.drop();
});

it("the README shows scripts (at least the first example and the checks)", () => {
  expect(scripts.length).toBeGreaterThanOrEqual(2);
  expect(scripts.some((code) => code.includes("checks."))).toBe(true);
});

it.each(scripts.map((code, i) => [i + 1, code] as const))("README script %i runs as written and succeeds", { timeout: 60_000 }, async (_, code) => {
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })).structuredContent as RunView;
  let view = await call("submit_run", { code, purpose: "An example from the README" });
  while (["previewing", "auto_approved", "queued", "running"].includes(view.status)) view = await call("get_run", { runId: view.runId, waitSeconds: 10 });
  expect(view, JSON.stringify(view)).toMatchObject({ status: "succeeded" });
  expect(view.error).toBeUndefined();
  expect(view.result).not.toBeNull();
});
