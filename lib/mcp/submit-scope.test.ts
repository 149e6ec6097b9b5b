/**
 * A token that may submit but not read runs (runs:submit alone), through the real server factory
 * and the SDK's Client on real PostgreSQL with the shipped policies: submit_run and call_tool
 * store the run and answer with it as submitted. They never fail with FORBIDDEN after the run was
 * stored, which would tell the agent that nothing happened.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";

let fixture: McpAgent;
let db: McpAgent["db"];
let client: Client;
let agentId: string;

beforeAll(async () => {
  // Nothing executes: a run stays queued, so an answer that waited for it would take 10 s.
  fixture = await connectMcpAgent("write-only", { executes: false, scopes: ["runs:submit"] });
  ({ db, client } = fixture);
  agentId = fixture.agent.id;
}, 120_000);

afterAll(() => fixture?.close());

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
  expect(await answer("get_run", { runId: submitted.runId })).toMatchObject({
    error: { code: "FORBIDDEN", message: "This needs the runs:read permission, which this agent's token does not hold (an admin can issue one that does)." },
  });
});
