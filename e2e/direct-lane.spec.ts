/**
 * The direct lane through the real MCP endpoint (`next start`, the SDK's Client): a read-only
 * call_tool returns the ledger's data and leaves its run and audit events; a write is refused with
 * USE_SUBMIT_RUN, and nothing is stored or called.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createPrismaClient } from "../lib/db";
import { expect, test } from "./fixtures";

type TextResult = { content: { type: string; text: string }[]; isError?: boolean; structuredContent?: unknown };

function body(result: unknown): { isError: boolean; data: Record<string, unknown> } {
  const r = result as TextResult;
  return { isError: Boolean(r.isError), data: JSON.parse(r.content[0]!.text) as Record<string, unknown> };
}

test("a read-only call_tool returns the tool's data and leaves a sealed run in the audit log", async ({ mcpClient: client, state }) => {
  const answer = await client.callTool({ name: "call_tool", arguments: { server: "ledger", tool: "listInvoices", arguments: { status: "paid", limit: 2 } } });
  const { isError, data } = body(answer);
  expect(isError).toBe(false);
  expect(data).toMatchObject({ status: "succeeded", decision: "allow" });
  const invoices = (data.result as { invoices: { status: string }[] }).invoices;
  expect(invoices).toHaveLength(2);
  expect(invoices.every((i) => i.status === "paid")).toBe(true);
  expect((answer as TextResult).structuredContent).toEqual(data);

  const db = createPrismaClient(state.databaseUrl);
  try {
    const run = await db.run.findUniqueOrThrow({ where: { id: data.runId as string }, include: { toolCalls: true } });
    expect(run).toMatchObject({ kind: "direct", status: "succeeded" });
    expect(run.toolCalls.map((c) => `${c.server}.${c.tool}`)).toEqual(["ledger.listInvoices"]);
    const events = await db.auditEvent.findMany({ where: { subjectId: run.id }, orderBy: { id: "asc" }, select: { action: true, data: true } });
    expect(events[0]).toMatchObject({ action: "run.submitted", data: { kind: "direct" } });
    expect(events.at(-1)).toMatchObject({ action: "run.succeeded", data: { toolCalls: 1 } });
  } finally {
    await db.$disconnect();
  }
});

test("a write through call_tool is refused with USE_SUBMIT_RUN: nothing is stored and nothing is called", async ({ mcpClient: client, state }) => {
  const db = createPrismaClient(state.databaseUrl);
  try {
    const answer = await client.callTool({
      name: "call_tool",
      arguments: {
        server: "ledger",
        tool: "issueRefund",
        arguments: { invoiceId: "inv_0001", amountMinor: 100, reason: "goodwill", idempotencyKey: "direct-e2e-1" },
      },
    });
    const { isError, data } = body(answer);
    expect(isError).toBe(true);
    expect(data).toEqual({
      error: {
        code: "USE_SUBMIT_RUN",
        message: expect.stringMatching(/issueRefund is not accepted as read-only.*submit_run/),
        next: expect.stringContaining("submit_run"),
      },
    });
    expect(await db.run.count({ where: { code: { contains: "direct-e2e-1" } } })).toBe(0);
    // The ledger never saw the key: no refund was issued under it.
    expect(await readFile(join(state.dataDir, "ledger-state.json"), "utf8").catch(() => "")).not.toContain("direct-e2e-1");
    const refused = await db.auditEvent.findMany({ where: { action: "run.refused", data: { path: ["reason"], equals: "USE_SUBMIT_RUN" } } });
    expect(refused.length).toBeGreaterThan(0);
  } finally {
    await db.$disconnect();
  }
});
