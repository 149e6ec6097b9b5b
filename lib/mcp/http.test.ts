/**
 * The HTTP door's waits, through handleMcpRequest with real Requests as Next hands them over (the
 * run store, the published policies and PostgreSQL real; no executor, so a write stays in its plan
 * preview): a client that disconnects ends its request's wait at once, and get_run's longest wait
 * answers inside the 60 s within which MCP clients time a request out. And the Accept headers real
 * clients send: any that takes JSON is served, one that takes only what the door never sends is
 * told what it sends, and a compressed body is refused as such.
 */
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";
import { handleMcpRequest } from "./http";

let fixture: McpAgent;
let runId: string;

const post = (body: unknown, signal?: AbortSignal, accept: string | null = "application/json, text/event-stream") =>
  handleMcpRequest(
    new Request("http://localhost/api/mcp", {
      method: "POST",
      headers: {
        host: "localhost",
        "content-type": "application/json",
        ...(accept === null ? {} : { accept }),
        authorization: `Bearer ${fixture.token}`,
      },
      body: JSON.stringify(body),
      signal,
    }),
  );

/** Settles with the outcome, or "pending" after `ms`. */
const within = <T>(work: Promise<T>, ms: number) =>
  Promise.race([
    work.then(
      () => "settled" as const,
      () => "settled" as const,
    ),
    new Promise<"pending">((resolve) => setTimeout(() => resolve("pending"), ms)),
  ]);

beforeAll(async () => {
  fixture = await connectMcpAgent("waiter", { executes: false });
  const answer = await fixture.client.callTool({
    name: "submit_run",
    arguments: { code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: "hello" });`, purpose: "remind" },
  });
  runId = (answer.structuredContent as { runId: string }).runId;
}, 120_000);

afterAll(() => fixture?.close());

describe("waits at the HTTP door", () => {
  it("a client that disconnects during tasks/result ends the request's wait at once, instead of polling until the run ends", async () => {
    const controller = new AbortController();
    const pending = post({ jsonrpc: "2.0", id: 1, method: "tasks/result", params: { taskId: runId } }, controller.signal);
    expect(await within(pending, 500)).toBe("pending");
    controller.abort();
    expect(await within(pending, 3_000)).toBe("settled");
  });

  it("get_run with the longest wait answers, still in progress, before a client's 60 s request timeout", { timeout: 75_000 }, async () => {
    const started = Date.now();
    const response = await post({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_run", arguments: { runId, waitSeconds: 60 } } });
    const took = Date.now() - started;
    const body = (await response.json()) as { result: { structuredContent: { status: string } } };
    expect(body.result.structuredContent.status).toBe("previewing");
    expect(took).toBeGreaterThan(50_000);
    expect(took).toBeLessThan(58_000);
  });

  it("serves a client that accepts JSON however it says so (only JSON, any type, no Accept); one that takes only an event stream is 406", async () => {
    const list = { jsonrpc: "2.0", id: 3, method: "tools/list" };
    for (const accept of ["application/json", "application/*", "*/*", null, "application/json, text/event-stream"]) {
      const response = await post(list, undefined, accept);
      expect(response.status, String(accept)).toBe(200);
      expect(((await response.json()) as { result: { tools: unknown[] } }).result.tools.length, String(accept)).toBe(8);
    }
    // Refused saying what it does answer with (the SDK said a client must accept both, which it need not).
    for (const accept of ["text/event-stream", "text/html"]) {
      const refused = await post(list, undefined, accept);
      expect(refused.status, accept).toBe(406);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
        "Not Acceptable: this endpoint answers with application/json; send Accept: application/json, text/event-stream",
      );
    }
  });

  it("a compressed body is 415, said so, not a parse error about UTF-8", async () => {
    const response = await handleMcpRequest(
      new Request("http://localhost/api/mcp", {
        method: "POST",
        headers: {
          host: "localhost",
          authorization: `Bearer ${fixture.token}`,
          "content-type": "application/json",
          accept: "application/json",
          "content-encoding": "gzip",
        },
        body: gzipSync(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list" })),
      }),
    );
    expect(response.status).toBe(415);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      "Unsupported Media Type: Content-Encoding gzip is not supported; send the body uncompressed",
    );
  });
});
