/**
 * record_outcome through the real MCP server factory and the SDK's Client (in-memory transport), on
 * real PostgreSQL: the run's own agent records what it did with a finished run's result — a row
 * linked to the run and a run.outcome_recorded event in the verified chain; another agent gets the
 * answer get_run gives for a run that is not its own, and nothing is written; bad arguments are
 * BAD_REQUEST naming the argument; an unfinished run, the 21st outcome and a missing scope are
 * refused; the table refuses changes; the run page lists the outcomes, the agent's detail inert.
 */
import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentOutcomes } from "@/components/run/run-sections";
import { verifyAuditChain } from "@/lib/audit/verify";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import { isScope, type Actor } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { createMcpServer } from "@/lib/mcp/server";
import { runDetail } from "@/lib/review/run-presenter";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { MAX_OUTCOMES_PER_RUN } from "./outcome";
import type { AgentActor } from "./service";
import { recordStoredRun } from "@/lib/audit/testing";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let agent: AgentActor;
let other: AgentActor;
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
  const client = new Client({ name: "outcome-test", version: "1" });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

/** A run of `owner` in `status`, written straight to the table (execution is not this file's subject). */
async function runOf(owner: AgentActor, status: "succeeded" | "denied" | "pending_review" = "succeeded") {
  const code = `return ${Math.random()};`;
  const digest = createHash("sha256").update(code).digest("hex");
  const run = await db.prisma.run.create({
    data: {
      agentId: owner.id,
      status,
      language: "javascript",
      code,
      codeSha256: digest,
      purpose: "outcome coverage",
      inputsDigest: digest,
      requestDigest: digest,
      ...(status === "succeeded" ? { result: { customers: 3 }, finishedAt: new Date() } : {}),
    },
  });
  await recordStoredRun(db.prisma, run);
  return run;
}

/** A tool call's answer: its JSON, or the protocol error it was refused with. */
async function call(
  client: Client,
  args: Record<string, unknown>,
): Promise<{ value?: Record<string, unknown>; isError?: boolean; protocol?: number; message?: string }> {
  try {
    const result = (await client.callTool({ name: "record_outcome", arguments: args })) as CallToolResult;
    const first = result.content[0];
    return { value: first?.type === "text" ? (JSON.parse(first.text) as Record<string, unknown>) : {}, isError: Boolean(result.isError) };
  } catch (error) {
    if (error instanceof McpError) return { protocol: error.code, message: error.message };
    throw error;
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_IN_PROCESS_WORKER: "false", AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-outcome-")) });
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
  agent = await makeAgent("answerer");
  other = await makeAgent("bystander");
}, 120_000);

afterAll(async () => {
  for (const client of clients) await client.close();
  await prisma().$disconnect();
  await db?.drop();
});

describe("record_outcome", () => {
  it("the run's agent records what it did, more than once: rows linked to the run and run.outcome_recorded events in a chain that verifies", async () => {
    const run = await runOf(agent);
    const client = await connect(agent);
    const first = await call(client, { runId: run.id, action: "answered_user", detail: "Told the user there are 3 customers." });
    expect(first).toMatchObject({ isError: false, value: { runId: run.id, action: "answered_user", outcomeId: expect.any(String), at: expect.any(String) } });
    const second = await call(client, { runId: run.id, action: "passed_to_tool" });
    expect(second.isError).toBe(false);

    const rows = await db.prisma.runOutcome.findMany({ where: { runId: run.id }, orderBy: { at: "asc" } });
    expect(rows.map((r) => [r.id, r.agentId, r.action, r.detail])).toEqual([
      [first.value!.outcomeId, agent.id, "answered_user", "Told the user there are 3 customers."],
      [second.value!.outcomeId, agent.id, "passed_to_tool", null],
    ]);
    const events = await db.prisma.auditEvent.findMany({ where: { action: "run.outcome_recorded", subjectId: run.id }, orderBy: { id: "asc" } });
    expect(events.map((e) => ({ actorType: e.actorType, actorId: e.actorId, subjectType: e.subjectType, data: e.data }))).toEqual([
      {
        actorType: "agent",
        actorId: agent.id,
        subjectType: "run",
        data: { action: "answered_user", detail: "Told the user there are 3 customers.", outcomeId: first.value!.outcomeId },
      },
      { actorType: "agent", actorId: agent.id, subjectType: "run", data: { action: "passed_to_tool", detail: null, outcomeId: second.value!.outcomeId } },
    ]);
    const report = await verifyAuditChain(db.prisma, { checkpoints: null });
    expect(report.broken).toBeNull();
    expect(report.ok).toBe(true);
  });

  it("records an outcome of a run that ended without running (denied): the agent told the user so", async () => {
    const run = await runOf(agent, "denied");
    expect((await call(await connect(agent), { runId: run.id, action: "answered_user" })).isError).toBe(false);
  });

  it("another agent gets the answer get_run gives for a run that is not its own, and nothing is written", async () => {
    const run = await runOf(agent);
    const client = await connect(other);
    const refused = await call(client, { runId: run.id, action: "discarded", detail: "not mine" });
    const getRun = (await client.callTool({ name: "get_run", arguments: { runId: run.id } })) as CallToolResult;
    const getRunAnswer = JSON.parse((getRun.content[0] as { text: string }).text) as unknown;
    expect(refused).toEqual({ isError: true, value: getRunAnswer });
    expect(refused.value).toEqual({ error: { code: "NOT_FOUND", message: `No run ${run.id} for this agent.`, next: expect.stringContaining("Check the id") } });
    const unknown = await call(client, { runId: "00000000-0000-4000-8000-000000000000", action: "discarded" });
    expect(unknown.value).toEqual({
      error: { code: "NOT_FOUND", message: "No run 00000000-0000-4000-8000-000000000000 for this agent.", next: expect.stringContaining("Check the id") },
    });
    expect(await db.prisma.runOutcome.count({ where: { runId: run.id } })).toBe(0);
    expect(await db.prisma.auditEvent.count({ where: { action: "run.outcome_recorded", subjectId: run.id } })).toBe(0);
  });

  it("refuses bad arguments as BAD_REQUEST naming the argument (a result the model reads), and writes nothing", async () => {
    const run = await runOf(agent);
    const client = await connect(agent);
    const refused = (message: RegExp) => ({
      isError: true,
      value: { error: { code: "BAD_REQUEST", message: expect.stringMatching(message), next: expect.any(String) } },
    });
    expect(await call(client, { runId: run.id, action: "deleted_it" })).toMatchObject(refused(/^action/));
    expect(await call(client, { runId: run.id, action: "other", detail: "x".repeat(2001) })).toMatchObject(refused(/^detail/));
    expect(await call(client, { runId: run.id, action: "other", detail: "a\u0000b" })).toMatchObject(refused(/detail: contains U\+0000/));
    expect(await call(client, { runId: run.id, action: "other", detail: "lone \ud800" })).toMatchObject(refused(/^detail/));
    expect(await call(client, { runId: run.id, action: "other", extra: true })).toMatchObject(refused(/extra/));
    expect(await call(client, { runId: "not-a-run", action: "other" })).toMatchObject(refused(/runId/));
    expect(await call(client, { runId: run.id, action: "other", detail: "x".repeat(2000) })).toMatchObject({ isError: false });
    expect(await db.prisma.runOutcome.count({ where: { runId: run.id } })).toBe(1);
  });

  it("refuses a run that has not ended, and the outcome after the twentieth", async () => {
    const client = await connect(agent);
    const waiting = await runOf(agent, "pending_review");
    expect(await call(client, { runId: waiting.id, action: "answered_user" })).toEqual({
      isError: true,
      value: {
        error: {
          code: "CONFLICT",
          message: expect.stringContaining("has not finished (status: pending_review)"),
          // Not the code's general advice (a new idempotencyKey means nothing here).
          next: "Wait for the run to end (get_run with waitSeconds), use its result, then record the outcome.",
        },
      },
    });
    const run = await runOf(agent);
    for (let i = 0; i < MAX_OUTCOMES_PER_RUN; i++) expect((await call(client, { runId: run.id, action: "other", detail: `${i}` })).isError).toBe(false);
    expect(await call(client, { runId: run.id, action: "other" })).toEqual({
      isError: true,
      value: { error: { code: "CONFLICT", message: expect.stringContaining(`the limit is ${MAX_OUTCOMES_PER_RUN}`), next: expect.any(String) } },
    });
    expect(await db.prisma.runOutcome.count({ where: { runId: run.id } })).toBe(MAX_OUTCOMES_PER_RUN);
  });

  it("needs runs:submit: an agent without it is refused, and the refusal is audited", async () => {
    const reader = await makeAgent("reader", ["runs:read"]);
    const run = await runOf(reader);
    const refused = await call(await connect(reader), { runId: run.id, action: "answered_user" });
    expect(refused).toMatchObject({ isError: true, value: { error: { code: "FORBIDDEN" } } });
    const forbidden = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "auth.forbidden", actorId: reader.id } });
    expect(forbidden.data).toMatchObject({ scope: "runs:submit", door: "mcp:record_outcome" });
  });

  it("outcomes are append-only: UPDATE, DELETE and TRUNCATE are refused by the database", async () => {
    const run = await runOf(agent);
    await call(await connect(agent), { runId: run.id, action: "discarded" });
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "RunOutcome" SET action = 'other' WHERE "runId" = '${run.id}'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`DELETE FROM "RunOutcome" WHERE "runId" = '${run.id}'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`TRUNCATE "RunOutcome"`)).rejects.toThrow(/append-only/);
  });

  it("the run page lists what the agent did, oldest first, its detail inert (no HTML, hidden characters marked)", async () => {
    const run = await runOf(agent);
    const client = await connect(agent);
    await call(client, { runId: run.id, action: "answered_user", detail: "<img src=x onerror=alert(1)> sent\u202e" });
    await call(client, { runId: run.id, action: "discarded" });
    const created = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "rita@example.com", role: "reviewer" }));
    const detail = await runDetail(db.prisma, run.id, { type: "user", id: created.id, email: "rita@example.com", role: "reviewer" });
    expect(detail!.agentOutcomes.map((o) => o.action)).toEqual(["answered user", "discarded"]);
    expect(detail!.agentOutcomes[1]!.detail).toBeNull();
    const html = renderToStaticMarkup(createElement(AgentOutcomes, { run: detail! }));
    expect(html).toContain("answered user");
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt; sent");
    expect(html).not.toContain("<img");
    expect(html).toContain("U+202E");
  });
});
