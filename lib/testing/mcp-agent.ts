/**
 * An agent talking to Airlock's MCP server in a test: a fresh test database with an admin owner
 * and the shipped policies published, one agent (default scopes unless given), and the SDK's
 * Client connected to the real server factory (lib/mcp/server.ts) over an in-memory pair, as the
 * HTTP door would build it for that agent. The process's runtime executes runs in process when
 * `executes` (a strict sandbox, the demo ledger), or only stores them. `close()` stops the client
 * and the runtime and drops the database.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createAgent, type NewAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { createMcpServer } from "@/lib/mcp/server";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { appRuntime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "./db";

export type McpAgent = { db: TestDatabase; client: Client; agent: AgentActor; token: string; close(): Promise<void> };

export async function connectMcpAgent(name: string, options: { executes: boolean; scopes?: NewAgent["scopes"] }): Promise<McpAgent> {
  const system: Actor = { type: "system", name: "test" };
  const db = await createTestDatabase();
  setEnvForChildren({
    DATABASE_URL: db.url,
    AIRLOCK_IN_PROCESS_WORKER: String(options.executes),
    AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-mcp-agent-")),
  });
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com", scopes: options.scopes }));
  const { ownerId } = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  const agent: AgentActor = { type: "agent", id: created.agentId, name, ownerId, scopes: created.scopes };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer({ agent, baseUrl: "http://localhost:3000" }).connect(serverSide);
  const client = new Client({ name, version: "1" });
  await client.connect(clientSide);
  return {
    db,
    client,
    agent,
    token: created.token,
    async close() {
      await client.close();
      await (await appRuntime(prisma())).close();
      await prisma().$disconnect();
      await db.drop();
    },
  };
}
