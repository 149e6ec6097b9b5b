/**
 * What a run's answer tells an agent to do while the run is not finished, on real parts (the
 * shipped policies, PostgreSQL, the MCP server as the HTTP door builds it), for a read of personal
 * data, which waits for reviewers: to call get_run only where the agent can. A token without
 * runs:read is told it cannot follow the run; a connection whose URL leaves get_run out is told to
 * follow it as an MCP task.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CreateTaskResultSchema, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent, type NewAgent } from "@/lib/auth/agents";
import type { AgentActor } from "@/lib/runs/service";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";
import { createMcpServer, selectTools } from "./server";

const PII_READ = `return (await tools.ledger.listCustomers({ limit: 1 })).customers.length;`;

let fixture: McpAgent;

beforeAll(async () => {
  fixture = await connectMcpAgent("follower", { executes: false });
}, 120_000);
afterAll(() => fixture?.close());

async function clientFor(agent: AgentActor, query = ""): Promise<Client> {
  const server = createMcpServer({ agent, baseUrl: "http://localhost:3000" }, selectTools(new URLSearchParams(query)));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "follow-test", version: "1" });
  await client.connect(clientSide);
  return client;
}

async function agentWith(name: string, scopes: NewAgent["scopes"]): Promise<AgentActor> {
  const made = await fixture.db.prisma.$transaction((tx) =>
    createAgent(tx, { type: "system", name: "test" }, { name, ownerEmail: "owner@example.com", scopes }),
  );
  return { type: "agent", id: made.agentId, name, ownerId: fixture.agent.ownerId, scopes: made.scopes };
}

async function submitted(client: Client, purpose: string): Promise<{ status: string; next: string }> {
  const answer = await client.callTool({ name: "submit_run", arguments: { code: PII_READ, purpose } });
  try {
    return answer.structuredContent as { status: string; next: string };
  } finally {
    await client.close();
  }
}

describe("how an answer tells the agent to follow its run", () => {
  it("with get_run offered and runs:read held: call get_run", async () => {
    const answer = await submitted(await clientFor(fixture.agent), "followed with get_run");
    expect(answer.status).toBe("pending_review");
    expect(answer.next).toContain("call get_run with this runId and waitSeconds");
  });

  it("on a connection whose URL leaves get_run out: follow it as an MCP task", async () => {
    const answer = await submitted(await clientFor(fixture.agent, "tools=search_tools,submit_run"), "followed as a task");
    expect(answer.status).toBe("pending_review");
    expect(answer.next).toContain("this connection does not offer get_run (its URL's ?tools=), so follow it as an MCP task: tasks/get or tasks/result");
    expect(answer.next).not.toContain("call get_run");
  });

  it("with a token that lacks runs:read: it cannot follow the run, and is told so instead of being sent to get_run", async () => {
    const submitter = await agentWith("submit-only", ["runs:submit", "tools:read"]);
    const answer = (await submitted(await clientFor(submitter), "submitted, not followed")) as unknown as { status?: string; next?: string };
    expect(answer.next).toContain("this token lacks runs:read, so it cannot follow the run or read its result");
    expect(answer.next).not.toContain("call get_run");
  });

  it("a task that failed says why in its statusMessage (its code, and the deciding policies of a denial), for clients that never call tasks/result", async () => {
    const client = await clientFor(fixture.agent);
    try {
      const created = await client.request(
        { method: "tools/call", params: { name: "submit_run", arguments: { code: `return eval("1");`, purpose: "denied as a task" }, task: {} } },
        CreateTaskResultSchema,
      );
      expect(created.task.status).toBe("failed");
      expect(created.task.statusMessage).toMatch(/^Run denied \(POLICY_DENIED: [a-z-]+(, [a-z-]+)*\); tasks\/result has the reasons\.$/);
    } finally {
      await client.close();
    }
  });

  it("with a token that lacks runs:read: submit_run is not offered as a task it could never follow, and a task is refused before anything is stored", async () => {
    const submitter = await agentWith("submit-no-tasks", ["runs:submit", "tools:read"]);
    const client = await clientFor(submitter);
    try {
      const listed = (await client.listTools()).tools.find((tool) => tool.name === "submit_run");
      expect(listed?.execution).toEqual({ taskSupport: "forbidden" });
      const before = await fixture.db.prisma.run.count({ where: { agentId: submitter.id } });
      await expect(
        client.request(
          { method: "tools/call", params: { name: "submit_run", arguments: { code: PII_READ, purpose: "as a task" }, task: {} } },
          CreateTaskResultSchema,
        ),
      ).rejects.toMatchObject({ code: ErrorCode.InvalidParams, message: expect.stringContaining("This token lacks runs:read, so it could not follow a task") });
      expect(await fixture.db.prisma.run.count({ where: { agentId: submitter.id } })).toBe(before);
    } finally {
      await client.close();
    }
  });
});
