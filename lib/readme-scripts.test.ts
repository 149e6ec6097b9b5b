/**
 * Every script the README shows (its ```ts blocks) runs as written: submitted by an agent through
 * the real MCP server under the default policy, against the demo ledger, in a strict sandbox, and
 * it succeeds. A README edit that breaks an example, or a change that breaks what the README
 * promises, fails here instead of in a new user's first minutes.
 */
import { readFileSync } from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const scripts = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
let fixture: McpAgent;
let client: Client;

type RunView = { runId: string; status: string; result?: unknown; error?: unknown; findings?: unknown };

beforeAll(async () => {
  fixture = await connectMcpAgent("reader", { executes: true });
  client = fixture.client;
}, 120_000);

afterAll(() => fixture?.close());

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
