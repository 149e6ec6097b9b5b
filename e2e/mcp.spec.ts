/**
 * The agent door with the MCP SDK's real Client against `next start`: discovery, submission under
 * policy, results, reasons, and every refusal path an agent can hit.
 */
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { CreateTaskResultSchema } from "@modelcontextprotocol/sdk/experimental/tasks/types.js";
import pg from "pg";
import { expect, test } from "./fixtures";

type TextResult = { content: { type: string; text: string }[]; structuredContent?: unknown; isError?: boolean };

function body(result: unknown): { isError: boolean; data: Record<string, unknown> } {
  const r = result as TextResult;
  return { isError: Boolean(r.isError), data: JSON.parse(r.content[0]!.text) as Record<string, unknown> };
}

test.describe("MCP endpoint", () => {
  test("lists exactly the eight agent tools", async ({ mcpClient: client }) => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "call_tool",
      "cancel_run",
      "get_run",
      "list_inputs",
      "record_outcome",
      "run_skill",
      "search_tools",
      "submit_run",
    ]);
  });

  test("a client's URL can select the tools it wants in context: it lists, and runs a script through, only those", async ({ connectMcp }) => {
    const client = await connectMcp(undefined, undefined, "/api/mcp?tools=search_tools,submit_run,get_run");
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["search_tools", "submit_run", "get_run"]);
    const result = body(
      await client.callTool({
        name: "submit_run",
        arguments: { code: `return (await tools.ledger.listInvoices({ limit: 2 })).invoices.length;`, purpose: "Count" },
      }),
    );
    expect(result.data).toMatchObject({ status: "succeeded", result: 2 });
    await expect(client.callTool({ name: "cancel_run", arguments: { runId: result.data.runId } })).rejects.toThrow(
      /cancel_run is not offered on this connection/,
    );
  });

  test("search_tools finds ledger tools and returns declarations at full detail", async ({ mcpClient: client }) => {
    const summary = body(await client.callTool({ name: "search_tools", arguments: { query: "invoices" } }));
    expect(JSON.stringify(summary.data)).toContain("listInvoices");
    // The text is the declaration alone, unescaped TypeScript; the structured value holds it and the list.
    const full = (await client.callTool({ name: "search_tools", arguments: { query: "listInvoices", detail: "full" } })) as TextResult;
    expect(full.content).toHaveLength(1);
    expect(full.content[0]!.text).toContain('listInvoices(args: {\n      customerId?: string;\n      status?: "draft"');
    expect(full.structuredContent).toMatchObject({ tools: [{ server: "ledger", name: "listInvoices" }], declaration: full.content[0]!.text });
  });

  test("a read-only script is auto-approved and its result returned", async ({ mcpClient: client }) => {
    const result = body(
      await client.callTool({
        name: "submit_run",
        arguments: {
          code: `const page = await tools.ledger.listInvoices({ status: "paid", limit: 500 });\nreturn { paid: page.invoices.length };`,
          purpose: "Count paid invoices",
          provenance: { model: "e2e", conversationId: "c-1" },
        },
      }),
    );
    expect(result.isError).toBe(false);
    expect(result.data).toMatchObject({ decision: "allow", status: "succeeded", isolation: "strict" });
    expect((result.data.result as { paid: number }).paid).toBeGreaterThan(0);
  });

  test("a write script is previewed, then waits in pending_review with its reasons and its plan", async ({ mcpClient: client }) => {
    const args = { invoiceId: "inv_0001", amountMinor: 100, reason: "goodwill", idempotencyKey: "mcp-spec-refund-1" };
    const result = body(
      await client.callTool({ name: "submit_run", arguments: { code: `await tools.ledger.issueRefund(${JSON.stringify(args)});`, purpose: "Refund" } }),
    );
    // submit_run waits for the preview: the agent sees the writes reviewers will approve in its answer.
    expect(result.data).toMatchObject({
      status: "pending_review",
      decision: "escalate",
      approvalsRequired: 2,
      plan: [{ seq: 1, server: "ledger", tool: "issueRefund", arguments: args }],
    });
  });

  test("eval-like code is denied with reasons as an isError result", async ({ mcpClient: client }) => {
    const result = body(await client.callTool({ name: "submit_run", arguments: { code: `return eval("1")`, purpose: "x", language: "javascript" } }));
    expect(result.isError).toBe(true);
    expect(result.data).toMatchObject({ status: "denied", error: { code: "POLICY_DENIED" } });
    expect(JSON.stringify(result.data.reasons)).toContain("deny-critical-findings");
  });

  test("the runtime's parameters through `arguments` and process through an overridden emit are denied before they run", async ({ mcpClient: client }) => {
    const attacks = [
      "const t = arguments[0];\nreturn await t.ledger.listInvoices({ limit: 1 });",
      [
        'import { EventEmitter } from "events";',
        "let leaked;",
        "const emit = EventEmitter.prototype.emit;",
        "EventEmitter.prototype.emit = function (...args) { leaked ??= this; return emit.apply(this, args); };",
        "Buffer(1);",
        "return typeof leaked?.pid;",
      ].join("\n"),
    ];
    for (const code of attacks) {
      const result = body(await client.callTool({ name: "submit_run", arguments: { code, purpose: "attack", language: "javascript" } }));
      expect(result.isError).toBe(true);
      expect(result.data).toMatchObject({ status: "denied", error: { code: "POLICY_DENIED" } });
      expect(JSON.stringify(result.data.reasons)).toContain("deny-critical-findings");
      expect((result.data.findings as { severity: string }[]).some((f) => f.severity === "critical")).toBe(true);
    }
  });

  test("a refund whose literal idempotency key breaks the tool's schema is denied before review, naming the argument and the rule", async ({
    mcpClient: client,
  }) => {
    const found = (await client.callTool({ name: "search_tools", arguments: { query: "refund", detail: "full" } })) as TextResult;
    expect(found.content[0]!.text).toContain("@minLength 8");
    const code = 'return await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 1, reason: "duplicate charge", idempotencyKey: "cs-1042" });';
    const result = body(await client.callTool({ name: "submit_run", arguments: { code, purpose: "refund cs-1042", language: "javascript" } }));
    expect(result.isError).toBe(true);
    expect(result.data).toMatchObject({ status: "denied", error: { code: "POLICY_DENIED" } });
    expect(JSON.stringify(result.data.reasons)).toContain("deny-invalid-arguments");
    expect((result.data.error as { message: string }).message).toContain("idempotencyKey must NOT have fewer than 8 characters (minLength)");
    expect(result.data.findings).toEqual([expect.objectContaining({ code: "argument_invalid", line: 1, column: 108 })]);
  });

  test("an idempotent resubmission returns the same run", async ({ mcpClient: client }) => {
    const args = { code: "return 42;", purpose: "answer", language: "javascript", idempotencyKey: "e2e-key" };
    const first = body(await client.callTool({ name: "submit_run", arguments: args }));
    const second = body(await client.callTool({ name: "submit_run", arguments: args }));
    expect(second.data.runId).toBe(first.data.runId);
  });

  test("arguments a tool refuses and oversize code are results the model reads, with clear messages; an unknown tool is a protocol error", async ({
    mcpClient: client,
  }) => {
    const refusal = async (name: string, args: Record<string, unknown>) => {
      const answer = (await client.callTool({ name, arguments: args })) as TextResult & { isError?: boolean };
      expect(answer.isError).toBe(true);
      return (JSON.parse(answer.content[0]!.text) as { error: { code: string; message: string; next: string } }).error;
    };
    expect(await refusal("submit_run", { purpose: "no code" })).toMatchObject({ code: "BAD_REQUEST", message: "code: required (string)" });
    expect(await refusal("get_run", { runId: "not-a-uuid" })).toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("runId") });
    expect(await refusal("submit_run", { code: "x".repeat(100_001), purpose: "big" })).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      message: expect.stringContaining("limit is 100000 bytes"),
    });
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  test("list_inputs shows the demo datasets with data classes", async ({ mcpClient: client }) => {
    const result = body(await client.callTool({ name: "list_inputs", arguments: {} }));
    expect(result.data.inputs).toEqual(expect.arrayContaining([expect.objectContaining({ name: "vip-customers.json", dataClass: "pii" })]));
  });
});

test.describe("MCP Tasks", () => {
  test("submit_run as a task completes, and a new connection can follow it and fetch the result", async ({ connectMcp }) => {
    const first = await connectMcp();
    const created = await first.request(
      {
        method: "tools/call",
        params: {
          name: "submit_run",
          arguments: { code: "const p = await tools.ledger.listInvoices({ limit: 2 });\nreturn p.invoices.length;", purpose: "task demo" },
          task: { ttl: 60_000 },
        },
      },
      CreateTaskResultSchema,
    );
    expect(["working", "completed"]).toContain(created.task.status);
    await first.close();

    const second = await connectMcp();
    await expect.poll(async () => (await second.experimental.tasks.getTask(created.task.taskId)).status, { timeout: 15_000 }).toBe("completed");
    const result = await second.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(body(result).data).toMatchObject({ runId: created.task.taskId, status: "succeeded", result: 2 });
    const listed = await second.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(created.task.taskId);
  });

  test("a task waiting for reviewers stays working (never input_required, which SDK clients answer with a blocking tasks/result) and can be cancelled", async ({
    mcpClient: client,
  }) => {
    const created = await client.request(
      {
        method: "tools/call",
        params: {
          name: "submit_run",
          arguments: { code: `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: "hello" });`, purpose: "remind" },
          task: {},
        },
      },
      CreateTaskResultSchema,
    );
    // A write is previewed first ("working"), then waits for reviewers.
    expect(created.task).toMatchObject({ status: "working", statusMessage: expect.stringContaining("plan") });
    await expect
      .poll(async () => (await client.experimental.tasks.getTask(created.task.taskId)).statusMessage, { timeout: 15_000 })
      .toContain("reviewer approval");
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe("working");
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe("cancelled");
    await expect(client.experimental.tasks.getTask("00000000-0000-4000-8000-000000000000")).rejects.toThrow(/not found/i);
  });
});

test.describe("MCP endpoint refusals", () => {
  test("no token and a bad token get 401 with the protected-resource metadata, each told what is wrong", async ({ request }) => {
    const attempts: [Record<string, string>, RegExp][] = [
      [{}, /no token; send Authorization: Bearer <agent token>/],
      [{ Authorization: "Bearer alk_abc extra" }, /the Authorization header is not one bearer token; send Authorization: Bearer <agent token>/],
      [{ Authorization: "Basic dXNlcjpwYXNz" }, /the Authorization header is not one bearer token/],
      [{ Authorization: "Bearer alk_" + "x".repeat(43) }, /the bearer token is not accepted \(unknown, revoked or expired\)/],
      [{ Authorization: "Bearer not-even-a-token" }, /the bearer token is not accepted \(unknown, revoked or expired\)/],
    ];
    for (const [headers, message] of attempts) {
      const response = await request.post("/api/mcp", {
        headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
        data: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      });
      expect(response.status()).toBe(401);
      expect(response.headers()["www-authenticate"]).toContain('resource_metadata="http://127.0.0.1');
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    const metadata = await request.get("/.well-known/oauth-protected-resource");
    expect(await metadata.json()).toMatchObject({ resource: expect.stringMatching(/\/api\/mcp$/), bearer_methods_supported: ["header"] });
  });

  test("an OAuth client without a token finds JSON where it looks: the metadata (also under /api/mcp), and how to get a token instead of an authorization server", async ({
    request,
  }) => {
    const metadata = await request.get("/.well-known/oauth-protected-resource/api/mcp");
    expect(await metadata.json()).toMatchObject({ resource: expect.stringMatching(/\/api\/mcp$/), bearer_methods_supported: ["header"] });
    for (const [method, path] of [
      ["GET", "/.well-known/oauth-authorization-server"],
      ["GET", "/.well-known/oauth-authorization-server/api/mcp"],
      ["GET", "/.well-known/openid-configuration"],
      ["GET", "/api/mcp/.well-known/openid-configuration"],
      ["GET", "/api/mcp/.well-known/oauth-authorization-server"],
      ["POST", "/register"],
      ["GET", "/authorize"],
      ["POST", "/token"],
      ["GET", "/.well-known/oauth-protected-resource/elsewhere"],
    ] as const) {
      const response = await request.fetch(path, { method, data: method === "POST" ? { redirect_uris: ["http://localhost/cb"] } : undefined });
      expect(response.status(), path).toBe(404);
      expect(response.headers()["content-type"], path).toContain("application/json");
      expect(((await response.json()) as { error_description: string }).error_description, path).toMatch(/bearer token an Airlock admin issues/);
    }
  });

  test("GET, the optional event stream, is 405 for an agent (so SDK clients stop reopening it) and 401 without a token", async ({ request, state }) => {
    const stream = { accept: "text/event-stream" };
    const answered = await request.get("/api/mcp", { headers: { ...stream, Authorization: `Bearer ${state.credentials.agent.token}` } });
    expect(answered.status()).toBe(405);
    expect(answered.headers()["allow"]).toBe("POST");
    expect(((await answered.json()) as { error: { message: string } }).error.message).toMatch(/offers no event stream; send requests with POST/);
    expect((await request.get("/api/mcp", { headers: stream })).status()).toBe(401);
  });

  test("a malformed tool selection in the URL is 400, naming the problem, not a 500 or every tool", async ({ request, state }) => {
    const headers = {
      Authorization: `Bearer ${state.credentials.agent.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const cases: [string, RegExp][] = [
      ["tools=submit_run,drop_table", /Bad Request: tools=: "drop_table" is not a tool; the tools are search_tools, submit_run/],
      ["tools=", /"" is not a tool/],
      ["tool=get_run", /Unknown query parameter "tool"/],
    ];
    for (const [query, message] of cases) {
      const response = await request.post(`/api/mcp?${query}`, { headers, data: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
      expect(response.status(), query).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
  });

  test("a batch is refused whole, before anything in it runs, when it is empty or two requests share an id; one with distinct ids is answered", async ({
    request,
    state,
  }) => {
    const headers = {
      Authorization: `Bearer ${state.credentials.agent.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const submit = (id: number, purpose: string) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "submit_run", arguments: { code: "return 1;", purpose, language: "javascript" } },
    });
    const purpose = `duplicate ids ${Date.now()}`;
    const cases: [unknown, RegExp][] = [
      [[], /Invalid Request: the batch is empty/],
      [[submit(77, purpose), submit(77, purpose)], /Invalid Request: two requests in the batch share the id 77; give each its own/],
    ];
    for (const [data, message] of cases) {
      const response = await request.post("/api/mcp", { headers, data });
      expect(response.status()).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: -32600, message: expect.stringMatching(message) }, id: null });
    }
    const notJson = await request.post("/api/mcp", { headers, data: Buffer.from("{not json") });
    expect(notJson.status()).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: -32700, message: "Parse error: The body must be JSON." } });
    // Bytes that are not UTF-8 (here inside a script) are refused, not stored as U+FFFD.
    const notUtf8 = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"submit_run","arguments":{"code":"return \''),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('\';","purpose":"bytes"}}}'),
    ]);
    const refusedBytes = await request.post("/api/mcp", { headers, data: notUtf8 });
    expect(refusedBytes.status()).toBe(400);
    expect(await refusedBytes.json()).toMatchObject({ error: { code: -32700, message: expect.stringContaining("not UTF-8") } });
    // Nothing of the refused batch ran: no run was stored with its purpose.
    const db = new pg.Client({ connectionString: state.databaseUrl });
    await db.connect();
    const stored = await db.query(`SELECT count(*)::int AS n FROM "Run" WHERE purpose = $1`, [purpose]);
    await db.end();
    expect(stored.rows[0]).toEqual({ n: 0 });
    const both = await request.post("/api/mcp", {
      headers,
      data: [
        { jsonrpc: "2.0", id: 1, method: "tools/list" },
        { jsonrpc: "2.0", id: 2, method: "tools/list" },
      ],
    });
    expect(both.status()).toBe(200);
    expect(((await both.json()) as { id: number }[]).map((answer) => answer.id).sort()).toEqual([1, 2]);
  });

  test("a foreign Host or Origin is refused (DNS rebinding)", async ({ request, state }) => {
    const auth = {
      Authorization: `Bearer ${state.credentials.agent.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    };
    const data = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    expect((await request.post("/api/mcp", { headers: { ...auth, Origin: "http://evil.example" }, data })).status()).toBe(403);
    expect((await request.post("/api/mcp", { headers: { ...auth, Host: "evil.example" }, data })).status()).toBe(403);
  });
});
