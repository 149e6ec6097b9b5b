/**
 * The text of a submission as intake reads it, through the real MCP server and SDK client: a
 * script of only whitespace is empty (the CLI already said so), and the one-line purpose reviewers
 * read is refused with a line break, a control character (an ANSI escape) or a bidi character that
 * could reorder what they see. A tab is text.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";

let fixture: McpAgent;

beforeAll(async () => {
  fixture = await connectMcpAgent("submission-text", { executes: false });
}, 120_000);
afterAll(() => fixture?.close());

const submit = (args: Record<string, unknown>) => fixture.client.callTool({ name: "submit_run", arguments: args });

it.each([
  [{ code: "  \n\t ", purpose: "nothing" }, /^code: code is empty/],
  [{ code: "return 1;", purpose: "one\nline" }, /^purpose: must be one line of plain text/],
  [{ code: "return 1;", purpose: "refund \u001b[2J1 cent" }, /purpose: must be one line/],
  [{ code: "return 1;", purpose: "refund 1 cent \u202e0052" }, /purpose: must be one line/],
])("refuses %j, naming the field, and stores nothing", async (args, message) => {
  const before = await fixture.db.prisma.run.count();
  // A refusal the model reads (an isError result, SEP-1303), naming the field.
  const result = (await submit(args)) as CallToolResult;
  expect(result.isError).toBe(true);
  const { error } = JSON.parse((result.content[0] as { text: string }).text) as { error: { code: string; message: string } };
  expect(error.code).toBe("BAD_REQUEST");
  expect(error.message).toMatch(message);
  expect(await fixture.db.prisma.run.count()).toBe(before);
});

it("takes a purpose with a tab", async () => {
  const result = await submit({
    code: "const page = await tools.ledger.listCustomers({ limit: 1 });\nreturn page.customers.length;",
    purpose: "count\tcustomers",
  });
  expect(result.structuredContent).toMatchObject({ runId: expect.any(String) });
});
