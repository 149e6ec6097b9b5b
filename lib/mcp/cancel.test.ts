/**
 * An agent's cancel of a running run, on real parts (a strict sandbox executing in process, the
 * shipped policies, PostgreSQL, the MCP server as the HTTP door builds it): cancel_run and MCP
 * tasks/cancel answer once the run has stopped, `cancelled`, not `running`, which an agent reads as
 * a cancel that did not work (and the spec's tasks/cancel answers with the task cancelled).
 */
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";

// Reads nothing and never ends by itself: auto-approved, it runs until it is stopped.
const LOOP = `let n = 0; for (;;) n++;`;

let fixture: McpAgent;

beforeAll(async () => {
  fixture = await connectMcpAgent("canceller", { executes: true });
}, 120_000);
afterAll(() => fixture?.close());

async function untilRunning(runId: string): Promise<void> {
  await expect
    .poll(async () => (await fixture.db.prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true } })).status, { timeout: 20_000 })
    .toBe("running");
}

describe("cancelling a running run", () => {
  it("cancel_run answers once the sandbox has stopped: cancelled, and the run ended so", async () => {
    const submitted = await fixture.client.callTool({ name: "submit_run", arguments: { code: LOOP, purpose: "loop until cancelled", language: "javascript" } });
    const { runId } = submitted.structuredContent as { runId: string };
    await untilRunning(runId);
    const answer = await fixture.client.callTool({ name: "cancel_run", arguments: { runId } });
    expect(answer.structuredContent).toEqual({ runId, status: "cancelled" });
    expect(await fixture.db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ status: "cancelled", finishedAt: expect.any(Date) });
    // Asked again: the same answer, at once.
    expect((await fixture.client.callTool({ name: "cancel_run", arguments: { runId } })).structuredContent).toEqual({ runId, status: "cancelled" });
  }, 60_000);

  it("tasks/cancel answers with the task cancelled", async () => {
    const created = await fixture.client.request(
      { method: "tools/call", params: { name: "submit_run", arguments: { code: LOOP, purpose: "loop as a task", language: "javascript" }, task: {} } },
      CreateTaskResultSchema,
    );
    await untilRunning(created.task.taskId);
    const cancelled = await fixture.client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled).toMatchObject({ taskId: created.task.taskId, status: "cancelled" });
  }, 60_000);
});
