/**
 * What the MCP door audits, through the real server factory (the one /api/mcp builds per request)
 * and the SDK's Client over an in-memory transport pair, on real PostgreSQL and the demo ledger
 * upstream: searches, input listings, reads of regulated results (get_run and tasks/result) and
 * refusals for a missing scope.
 */
import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { isScope, type Actor } from "@/lib/auth/scopes";
import { createUser } from "@/lib/auth/users";
import { prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { createDataset } from "@/lib/runs/datasets";
import { appRuntime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { createMcpServer } from "./server";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let agent: AgentActor;
let limited: AgentActor;
const clients: Client[] = [];

async function makeAgent(name: string, scopes?: ("runs:submit" | "runs:read" | "tools:read" | "inputs:read")[]): Promise<AgentActor> {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name, ownerEmail: "owner@example.com", scopes }));
  const row = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  return { type: "agent", id: row.id, name, ownerId: row.ownerId, scopes: created.scopes.filter(isScope) };
}

async function connect(as: AgentActor): Promise<Client> {
  const server = createMcpServer({ agent: as, baseUrl: "http://localhost:3000" });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "audit-test", version: "1" });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

async function eventsOf(action: string, actorId?: string) {
  return db.prisma.auditEvent.findMany({ where: { action, ...(actorId ? { actorId } : {}) }, orderBy: { id: "asc" } });
}

/** A finished run written straight to the table (execution is not what this file tests). */
async function finishedRun(
  owner: AgentActor,
  options: { inputs?: { name: string; dataClass: string }[]; dataClasses?: string[]; status?: "succeeded" | "pending_review" },
) {
  const code = `return ${Math.random()};`;
  const digest = createHash("sha256").update(code).digest("hex");
  const status = options.status ?? "succeeded";
  return db.prisma.run.create({
    data: {
      agentId: owner.id,
      status,
      language: "typescript",
      code,
      codeSha256: digest,
      purpose: "audit coverage",
      inputs: (options.inputs ?? []).map((i) => ({ ...i, datasetId: null, sha256: digest })),
      inputsDigest: digest,
      requestDigest: digest,
      decision: status === "succeeded" ? "allow" : "escalate",
      facts: { effect: "read_only", openWorld: false, dataClasses: options.dataClasses ?? [], toolCount: 1 },
      ...(status === "succeeded" ? { result: { customers: 3 }, stats: { logs: [], flags: [] }, finishedAt: new Date() } : {}),
    },
  });
}

function payload(result: unknown): { error?: { code: string }; result?: unknown } {
  const parsed = CallToolResultSchema.parse(result) as CallToolResult;
  const first = parsed.content[0];
  return first?.type === "text" ? (JSON.parse(first.text) as { error?: { code: string }; result?: unknown }) : {};
}

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_IN_PROCESS_WORKER: "false", AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-mcp-audit-")) });
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await createDataset(tx, system, { name: "rates.csv", dataClass: "public", mediaType: "text/csv", content: "currency,rate\nEUR,1.08\n" });
    await createDataset(tx, system, { name: "people.json", dataClass: "pii", mediaType: "application/json", content: "[]" });
  });
  agent = await makeAgent("analyst");
  limited = await makeAgent("reader-only", ["runs:submit"]);
}, 120_000);

afterAll(async () => {
  for (const client of clients) await client.close();
  await (await appRuntime(prisma())).close();
  await prisma().$disconnect();
  await db?.drop();
});

describe("MCP audit coverage", () => {
  it("records search_tools as tools.searched with the query and detail, by the agent", async () => {
    const client = await connect(agent);
    const result = await client.callTool({ name: "search_tools", arguments: { query: "invoices", detail: "name" } });
    expect(result.isError).toBeFalsy();
    const events = await eventsOf("tools.searched", agent.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: "agent", actorId: agent.id, subjectType: "tool_registry" });
    expect(events[0]!.data).toMatchObject({ query: "invoices", detail: "name", server: null });
    expect((events[0]!.data as { results: number }).results).toBeGreaterThan(0);
    await client.callTool({ name: "search_tools", arguments: {} });
    expect((await eventsOf("tools.searched", agent.id)).at(-1)!.data).toMatchObject({ query: null, detail: "summary" });
  });

  it("records list_inputs as inputs.listed, by the agent", async () => {
    const client = await connect(agent);
    const result = await client.callTool({ name: "list_inputs", arguments: {} });
    expect((payload(result) as { inputs?: unknown[] }).inputs).toHaveLength(2);
    const events = await eventsOf("inputs.listed", agent.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: "agent", actorId: agent.id, data: { count: 2 } });
  });

  it("records get_run of a regulated run's result as run.result_read — by input class or by tool class — and nothing for unregulated or unfinished runs", async () => {
    const client = await connect(agent);
    const byInput = await finishedRun(agent, { inputs: [{ name: "people.json", dataClass: "pii" }], dataClasses: ["internal"] });
    const byTool = await finishedRun(agent, { dataClasses: ["financial", "internal"] });
    const plain = await finishedRun(agent, { inputs: [{ name: "rates.csv", dataClass: "public" }], dataClasses: ["internal"] });
    const waiting = await finishedRun(agent, { dataClasses: ["pii"], status: "pending_review" });

    for (const run of [byInput, byTool, plain, waiting]) {
      const result = await client.callTool({ name: "get_run", arguments: { runId: run.id } });
      expect(payload(result).error?.code).not.toBe("FORBIDDEN");
    }
    expect(payload(await client.callTool({ name: "get_run", arguments: { runId: byInput.id } })).result).toEqual({ customers: 3 });

    const events = await eventsOf("run.result_read", agent.id);
    expect(events.map((e) => e.subjectId)).toEqual([byInput.id, byTool.id, byInput.id]);
    expect(events[0]).toMatchObject({
      actorType: "agent",
      subjectType: "run",
      data: { via: "get_run", dataClasses: ["internal", "pii"], status: "succeeded" },
    });
    expect(events[1]!.data).toMatchObject({ dataClasses: ["financial", "internal"] });
  });

  it("records tasks/result of a regulated run as run.result_read; tasks/get records nothing", async () => {
    const client = await connect(agent);
    const run = await finishedRun(agent, { dataClasses: ["phi"] });
    const before = (await eventsOf("run.result_read", agent.id)).length;
    const task = await client.experimental.tasks.getTask(run.id);
    expect(task.status).toBe("completed");
    expect(await eventsOf("run.result_read", agent.id)).toHaveLength(before);
    const result = await client.experimental.tasks.getTaskResult(run.id, CallToolResultSchema);
    expect(payload(result).result).toEqual({ customers: 3 });
    const events = (await eventsOf("run.result_read", agent.id)).slice(before);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ subjectId: run.id, data: { via: "tasks/result", dataClasses: ["phi"] } });
  });

  it("records a missing scope as auth.forbidden {scope, door}, for tools and for task methods", async () => {
    const client = await connect(limited);
    const searched = await client.callTool({ name: "search_tools", arguments: { query: "x" } });
    expect(searched.isError).toBe(true);
    expect(payload(searched).error?.code).toBe("FORBIDDEN");
    const listed = await client.callTool({ name: "list_inputs", arguments: {} });
    expect(payload(listed).error?.code).toBe("FORBIDDEN");
    const read = await client.callTool({ name: "get_run", arguments: { runId: "00000000-0000-4000-8000-000000000000" } });
    expect(payload(read).error?.code).toBe("FORBIDDEN");
    await expect(client.experimental.tasks.getTask("00000000-0000-4000-8000-000000000000")).rejects.toThrow(/runs:read/);

    const events = await eventsOf("auth.forbidden", limited.id);
    expect(events.map((e) => e.data)).toEqual([
      { scope: "tools:read", door: "mcp:search_tools" },
      { scope: "inputs:read", door: "mcp:list_inputs" },
      { scope: "runs:read", door: "mcp:get_run" },
      { scope: "runs:read", door: "mcp:tasks/get" },
    ]);
    expect(events[0]).toMatchObject({ actorType: "agent", actorId: limited.id, subjectType: "agent", subjectId: limited.id });
    // Nothing was searched, listed or read.
    expect(await eventsOf("tools.searched", limited.id)).toHaveLength(0);
    expect(await eventsOf("inputs.listed", limited.id)).toHaveLength(0);
  });
});
