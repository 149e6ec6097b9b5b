/**
 * What the MCP door audits, through the real server factory (the one /api/mcp builds per request)
 * and the SDK's Client over an in-memory transport pair, on real PostgreSQL and the demo ledger
 * upstream: searches, input listings, reads of regulated results (get_run and tasks/result) and
 * refusals for a missing scope. Also the tools' contract: tools/list generated from the zod
 * schemas (constraints, output schemas, its token budget), structured results, and one error
 * classification for the tool and the task path.
 */
import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CancelTaskResultSchema, CreateTaskResultSchema, ListTasksResultSchema } from "@modelcontextprotocol/sdk/experimental/tasks/types.js";
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { encode } from "gpt-tokenizer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { isScope, type Actor } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { createPrismaClient, prisma } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
import { createDataset } from "@/lib/runs/datasets";
import { appRuntime } from "@/lib/runs/runtime";
import type { AgentActor, RunView } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { AppError, RUN_ERROR_RULES } from "@/lib/errors";
import { BudgetExceeded } from "@/lib/intake/submit";
import { ProtocolError, classifyMcpError, requestRefusal, toolFailure } from "./errors";
import { createMcpServer, selectTools } from "./server";
import { runTaskStore } from "./tasks";
import { agentView } from "./tools";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let agent: AgentActor;
let limited: AgentActor;
let readOnly: AgentActor;
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
      ...(status === "succeeded"
        ? {
            result: { customers: 3 },
            execution: { wallMs: 1, cpuMs: 1, peakRssMb: 1, toolCalls: 1, logs: [], flags: [], truncated: false, artifacts: [] },
            finishedAt: new Date(),
          }
        : {}),
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
  readOnly = await makeAgent("no-submit", ["runs:read", "tools:read"]);
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
    // A credential in the words is kept out of the log, as in any agent text it stores.
    const token = ["ghp", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"].join("_");
    await client.callTool({ name: "search_tools", arguments: { query: `invoices ${token}` } });
    const searched = (await eventsOf("tools.searched", agent.id)).at(-1)!;
    expect(JSON.stringify(searched.data)).not.toContain(token);
    expect((searched.data as { query: string }).query).toMatch(/^invoices \[REDACTED:github_token\]$/);
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

  it("lists only the tools a token may call, and records a call without the scope as auth.forbidden {scope, door}, for tools and for task methods", async () => {
    const client = await connect(limited);
    // Listed: only what the token may call. The others are still answered, refused and recorded.
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["submit_run", "call_tool", "run_skill", "cancel_run", "record_outcome"]);
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

describe("MCP tasks", () => {
  it("tasks/list refuses a cursor it never returned (a paginating client would loop on page one)", async () => {
    const client = await connect(agent);
    await expect(client.request({ method: "tasks/list", params: { cursor: "garbage" } }, ListTasksResultSchema)).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
      message: expect.stringContaining("cursor: not a nextCursor tasks/list returned"),
    });
    await expect(client.request({ method: "tasks/list", params: {} }, ListTasksResultSchema)).resolves.toMatchObject({ tasks: expect.any(Array) });
  });

  it("tasks/list and tasks/cancel over a database that fails: logged, never shown (the SDK wraps the store's message into its own)", async () => {
    const dead = createPrismaClient("postgresql://nobody:secret-password@127.0.0.1:1/none");
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const server = createMcpServer({ agent, baseUrl: "http://localhost:3000" });
      // The server's task store, over the dead database: the store is what the SDK's handlers call.
      (server as unknown as { _taskStore: unknown })._taskStore = runTaskStore(dead, agent, () => ({ content: [] }));
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: "dead-db", version: "1" });
      await client.connect(clientSide);
      clients.push(client);
      for (const request of [
        client.request({ method: "tasks/list", params: {} }, ListTasksResultSchema),
        client.request({ method: "tasks/cancel", params: { taskId: "00000000-0000-4000-8000-000000000000" } }, CancelTaskResultSchema),
      ]) {
        const error = (await request.catch((caught: unknown) => caught)) as McpError;
        expect(error).toBeInstanceOf(McpError);
        expect(error.message).toMatch(/Internal error$/);
        expect(error.message).not.toMatch(/127\.0\.0\.1|secret|prisma|tasks\.ts/i);
      }
      expect(logged).toHaveBeenCalled();
    } finally {
      logged.mockRestore();
      await dead.$disconnect();
    }
  });
});

/** What a call failed with: a protocol error's code and message, or an isError result's typed code. */
async function outcome(call: Promise<unknown>): Promise<{ protocol?: number; code?: string; message: string }> {
  try {
    const result = (await call) as CallToolResult;
    const error = (payload(result) as { error?: { code: string; message: string } }).error;
    if (!result.isError || !error) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
    return { code: error.code, message: error.message };
  } catch (error) {
    if (!(error instanceof McpError)) throw error;
    return { protocol: error.code, message: error.message };
  }
}

const ESCALATED = `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "hello" });`;

function asTask(client: Client, args: Record<string, unknown>) {
  return client.request({ method: "tools/call", params: { name: "submit_run", arguments: args, task: {} } }, CreateTaskResultSchema);
}

describe("MCP tool contract", () => {
  it("tools/list: the eight tools, each with a closed input schema and an output schema generated from zod, within 1,100 tokens", async () => {
    const client = await connect(agent);
    const list = await client.listTools();
    const byName = Object.fromEntries(list.tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName).sort()).toEqual([
      "call_tool",
      "cancel_run",
      "get_run",
      "list_inputs",
      "record_outcome",
      "run_skill",
      "search_tools",
      "submit_run",
    ]);
    for (const tool of list.tools) {
      expect(tool.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
      expect(tool.outputSchema).toMatchObject({ type: "object", properties: expect.any(Object) });
      expect(tool.description!.length).toBeGreaterThan(10);
    }
    expect(JSON.stringify(list)).not.toContain("$schema");
    expect(encode(JSON.stringify(list)).length).toBeLessThanOrEqual(1100);

    // The constraints the zod schemas enforce are published.
    const submit = byName.submit_run!.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(byName.submit_run!.inputSchema.required).toEqual(["code", "purpose"]);
    expect(submit.code).toMatchObject({ type: "string", minLength: 1, description: "The script" });
    expect(submit.purpose).toMatchObject({ maxLength: 2000 });
    expect(submit.language).toMatchObject({ enum: ["typescript", "javascript"], default: "typescript" });
    expect(submit.inputs).toMatchObject({ maxItems: 20, items: { type: "string", maxLength: 128 } });
    expect(submit.idempotencyKey).toMatchObject({ minLength: 1, maxLength: 200 });
    expect(submit.provenance).toMatchObject({
      additionalProperties: false,
      properties: { prompt: { maxLength: 32768 }, context: { maxLength: 65536 }, model: { maxLength: 200 } },
    });
    expect(byName.record_outcome!.inputSchema).toMatchObject({
      required: ["runId", "action"],
      properties: { action: { enum: ["answered_user", "passed_to_tool", "discarded", "other"] }, detail: { maxLength: 2000 } },
    });
    expect(byName.get_run!.inputSchema.properties).toMatchObject({
      runId: { type: "string", format: "uuid" },
      waitSeconds: { type: "number", minimum: 0, maximum: 60 },
    });
    expect(byName.search_tools!.inputSchema.properties).toMatchObject({
      query: { maxLength: 200 },
      server: { maxLength: 64 },
      detail: { enum: ["name", "summary", "full"], default: "summary" },
    });
    expect(byName.cancel_run!.inputSchema).toMatchObject({ required: ["runId"], properties: { runId: { format: "uuid" } } });
    expect(byName.submit_run!.execution).toEqual({ taskSupport: "optional" });
    expect(byName.get_run!.outputSchema).toEqual(byName.submit_run!.outputSchema);

    // …and enforced as published.
    // Arguments off the schema are a result the model reads (SEP-1303), naming the field and the rule.
    const waitTooLong = await outcome(client.callTool({ name: "get_run", arguments: { runId: "00000000-0000-4000-8000-000000000000", waitSeconds: 61 } }));
    expect(waitTooLong).toEqual({ code: "BAD_REQUEST", message: "waitSeconds: Too big: expected number to be <=60" });
    const longQuery = await outcome(client.callTool({ name: "search_tools", arguments: { query: "x".repeat(201) } }));
    expect(longQuery).toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("query") });
    const extra = await outcome(client.callTool({ name: "list_inputs", arguments: { unexpected: true } }));
    expect(extra.code).toBe("BAD_REQUEST");
    const missing = await client.callTool({ name: "submit_run", arguments: { code: "return 1;" } });
    expect(missing.isError).toBe(true);
    expect(JSON.parse((missing.content as { text: string }[])[0]!.text)).toEqual({
      error: { code: "BAD_REQUEST", message: "purpose: required (string)", next: expect.stringContaining("tools/list has this tool's input schema") },
    });
  });

  it("the mistakes agents make in names are answered with the name they meant", async () => {
    const client = await connect(agent);
    // An argument under another spelling: named, with the one it stands for (not "runId: required").
    expect(await outcome(client.callTool({ name: "get_run", arguments: { run_id: "00000000-0000-4000-8000-000000000000" } }))).toEqual({
      code: "BAD_REQUEST",
      message: "run_id: not an argument of this tool; did you mean runId?",
    });
    expect(await outcome(client.callTool({ name: "get_run", arguments: { id: "00000000-0000-4000-8000-000000000000" } }))).toEqual({
      code: "BAD_REQUEST",
      message: "id: not an argument of this tool; did you mean runId?",
    });
    expect(await outcome(client.callTool({ name: "submit_run", arguments: { script: "return 1;" } }))).toEqual({
      code: "BAD_REQUEST",
      message: "script: not an argument of this tool; code, purpose are required",
    });
    expect(
      await outcome(client.callTool({ name: "submit_run", arguments: { code: "return 1;", purpose: "x", provenance: { conversation_id: "c" } } })),
    ).toEqual({
      code: "BAD_REQUEST",
      message: "provenance.conversation_id: not an argument of provenance",
    });
    // call_tool given a script's spelling of the tool.
    expect(await outcome(client.callTool({ name: "call_tool", arguments: { tool: "tools.ledger.listInvoices", arguments: {} } }))).toEqual({
      code: "BAD_REQUEST",
      message: 'server: required; tool "tools.ledger.listInvoices" names both: send server "ledger" and tool "listInvoices"',
    });
    // A tool of Airlock's, misspelt; an upstream's tool called as if it were Airlock's.
    expect(await outcome(client.callTool({ name: "submit_runs", arguments: {} }))).toEqual({
      protocol: ErrorCode.InvalidParams,
      message: expect.stringContaining('Unknown tool "submit_runs"; did you mean submit_run?'),
    });
    // What is quoted back is the agent's own text without control, bidi or invisible characters, and without a credential.
    const hostile = await outcome(client.callTool({ name: "get_run", arguments: { ["run\u202eid\u001b[2J"]: "x" } }));
    expect(hostile).toEqual({ code: "BAD_REQUEST", message: "runid: not an argument of this tool; did you mean runId?" });
    const secret = `sk-ant-api03-${"A1b2C3d4".repeat(6)}`;
    const named = await outcome(client.callTool({ name: secret, arguments: {} }));
    expect(JSON.stringify(named)).not.toContain(secret.slice(14));
    const bidi = await outcome(client.callTool({ name: "ledger\u202e.listInvoices", arguments: {} }));
    expect(JSON.stringify(bidi)).not.toMatch(/\\u202e|\u202e/);
    expect(await outcome(client.callTool({ name: "listInvoices", arguments: {} }))).toEqual({
      protocol: ErrorCode.InvalidParams,
      message: expect.stringContaining(
        "An upstream's tools (search_tools finds them) are called in a script given to submit_run, or one at a time with call_tool.",
      ),
    });
  });

  it("a connection's URL may select fewer tools: only those are listed and callable, each still under its scope; a malformed selection is refused by name", async () => {
    const reader = await makeAgent("selected-reader", ["runs:read", "tools:read"]);
    const selection = selectTools(new URLSearchParams("tools=get_run,search_tools,submit_run"));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer({ agent: reader, baseUrl: "http://localhost:3000" }, selection).connect(serverSide);
    const client = new Client({ name: "selection-test", version: "1" });
    await client.connect(clientSide);
    clients.push(client);

    const list = await client.listTools();
    // In the tools' own order, whatever order the URL names them in; submit_run is selected but
    // not listed, as this token has no runs:submit.
    expect(list.tools.map((tool) => tool.name)).toEqual(["search_tools", "get_run"]);
    const full = await (await connect(reader)).listTools();
    expect(full.tools.map((tool) => tool.name)).toEqual(["search_tools", "get_run"]);
    const everything = await (await connect(agent)).listTools();
    expect(encode(JSON.stringify(list)).length).toBeLessThan(encode(JSON.stringify(everything)).length * 0.6);

    // A tool left out is refused as not offered, not as unknown; an unknown one is still unknown.
    expect(await outcome(client.callTool({ name: "cancel_run", arguments: { runId: "00000000-0000-4000-8000-000000000000" } }))).toEqual({
      protocol: ErrorCode.InvalidParams,
      message: expect.stringContaining("cancel_run is not offered on this connection, whose URL selects search_tools, submit_run, get_run"),
    });
    expect(await outcome(client.callTool({ name: "no_such_tool", arguments: {} }))).toMatchObject({ message: expect.stringContaining("Unknown tool") });
    // Selecting a tool grants nothing: this agent has no runs:submit.
    expect(await outcome(client.callTool({ name: "submit_run", arguments: { code: "return 1;", purpose: "x" } }))).toMatchObject({ code: "FORBIDDEN" });
    expect(payload(await client.callTool({ name: "search_tools", arguments: { query: "listInvoices" } }))).toMatchObject({ tools: [{ name: "listInvoices" }] });

    expect(selectTools(new URLSearchParams(""))).toHaveLength(8);
    const refusals: [string, RegExp][] = [
      ["tools=", /"" is not a tool; the tools are search_tools, submit_run, call_tool/],
      ["tools=get_run,", /"" is not a tool/],
      ["tools=get_run, submit_run", /" submit_run" is not a tool/],
      ["tools=GET_RUN", /"GET_RUN" is not a tool/],
      ["tools=get_run,get_run", /a tool is named twice/],
      ["tools=get_run&tools=submit_run", /given more than once/],
      ["toolset=code", /Unknown query parameter "toolset"; the endpoint takes only tools=<names>/],
      ["tools=get_run&x=1", /Unknown query parameter "x"/],
    ];
    for (const [query, message] of refusals) {
      let thrown: unknown;
      try {
        selectTools(new URLSearchParams(query));
      } catch (error) {
        thrown = error;
      }
      expect(thrown, query).toBeInstanceOf(AppError);
      expect((thrown as AppError).code).toBe("bad_request");
      expect((thrown as AppError).message, query).toMatch(message);
    }
  });

  it("every result carries structuredContent equal to its JSON text, valid against the output schema", async () => {
    const client = await connect(agent);
    await client.listTools(); // the SDK client then validates structuredContent against each outputSchema
    const run = await finishedRun(agent, { dataClasses: ["internal"] });
    const waiting = await finishedRun(agent, { status: "pending_review" });
    const submitted = await client.callTool({ name: "submit_run", arguments: { code: "return 1;", purpose: "structured", language: "javascript" } });
    const results = [
      await client.callTool({ name: "search_tools", arguments: { query: "invoices" } }),
      await client.callTool({ name: "list_inputs", arguments: {} }),
      await client.callTool({ name: "get_run", arguments: { runId: run.id } }),
      submitted,
      await client.callTool({ name: "cancel_run", arguments: { runId: waiting.id } }),
    ];
    for (const result of results) {
      const text = (result.content as { type: string; text: string }[])[0]!.text;
      expect(result.structuredContent, text).toBeDefined();
      expect(result.structuredContent).toStrictEqual(JSON.parse(text));
      expect(text).toBe(JSON.stringify(result.structuredContent));
    }
    expect(results[2]!.structuredContent).toMatchObject({ runId: run.id, status: "succeeded", result: { customers: 3 } });
    expect(submitted.structuredContent).toMatchObject({ runId: expect.any(String), decision: expect.any(String) });

    // search_tools at detail full: the text is the declaration alone, unescaped TypeScript that names
    // every tool found; the structured value holds the list as well.
    const full = await client.callTool({ name: "search_tools", arguments: { query: "invoice", detail: "full" } });
    const [declaration, ...more] = full.content as { type: string; text: string }[];
    expect(more).toEqual([]);
    expect(declaration!.text).toMatch(/^declare const tools: \{\n[^]*listInvoices\(args: \{\n/);
    const fullValue = full.structuredContent as { tools: { server: string; name: string }[]; declaration: string };
    expect(fullValue.declaration).toBe(declaration!.text);
    expect(fullValue.tools.length).toBeGreaterThan(1);
    for (const tool of fullValue.tools) expect(declaration!.text).toMatch(new RegExp(`\\n  ${tool.server}: \\{[^]*\\n    ${tool.name}\\(args:`));
    const none = await client.callTool({ name: "search_tools", arguments: { query: "zzz-nothing", server: "ledger", detail: "full" } });
    expect(none.structuredContent).toMatchObject({ tools: [] });
    expect((none.content as { text: string }[])[0]!.text).toBe("// No tool matches this search (search_tools with no query lists every tool).");
    expect(results[4]!.structuredContent).toEqual({ runId: waiting.id, status: "cancelled" });

    // A run that did not succeed is an isError result that still carries the run.
    const denied = await client.callTool({ name: "submit_run", arguments: { code: `return eval("1")`, purpose: "denied", language: "javascript" } });
    expect(denied.isError).toBe(true);
    expect(denied.structuredContent).toMatchObject({ status: "denied", error: { code: "POLICY_DENIED" } });
    expect(denied.structuredContent).toStrictEqual(JSON.parse((denied.content as { text: string }[])[0]!.text));

    // A denial leads with what to fix: the typo'd tool with the name it meant, no type dump.
    const typo = await client.callTool({
      name: "submit_run",
      arguments: { code: `const r = await tools.ledger.issueRefnd({ invoiceId: "inv_0001" });\nreturn r;`, purpose: "typo" },
    });
    const typoError = (typo.structuredContent as { error: { message: string; untrusted: boolean } }).error;
    expect(typoError.message).toMatch(
      /^line 1:17: tools\.ledger\.issueRefnd is not a tool; did you mean tools\.ledger\.issueRefund\? \(unknown_tool\)\. Denied by policy: /,
    );
    expect(typoError.message).not.toContain("more ...");
    expect(typoError.untrusted).toBe(true);

    // So does tasks/result.
    const viaTask = await client.experimental.tasks.getTaskResult(run.id, CallToolResultSchema);
    expect(viaTask.structuredContent).toStrictEqual(JSON.parse((viaTask.content[0] as { text: string }).text));

    // A run's answer leaves out what is empty, on both doors: the run has no findings, logs or flags.
    for (const answer of [results[2]!.structuredContent, viaTask.structuredContent] as Record<string, unknown>[]) {
      expect(answer).toMatchObject({ runId: run.id, status: "succeeded", decision: "allow", consoleUrl: expect.any(String) });
      for (const key of ["capabilitySet", "findings", "comments", "logs", "flags", "truncated"]) expect(answer, key).not.toHaveProperty(key);
    }
  });

  it("agentView leaves out empty lists, false flags and null fields, keeps a null result, and keeps what is not empty", () => {
    const view = {
      runId: "r",
      status: "succeeded",
      decision: "allow",
      reasons: [{ policyId: "p", text: "t" }],
      capabilitySet: [],
      findings: [],
      comments: [],
      consoleUrl: "http://x/runs/r",
      result: null,
      logs: [],
      flags: ["secret_redacted"],
      truncated: false,
      isolation: null,
      error: { code: "SCRIPT_ERROR", message: "m", untrusted: false, next: "n" },
      rows: { read: {}, returned: 0, covered: null },
    } as const;
    expect(agentView(view as unknown as RunView)).toStrictEqual({
      runId: "r",
      status: "succeeded",
      decision: "allow",
      reasons: [{ policyId: "p", text: "t" }],
      consoleUrl: "http://x/runs/r",
      result: null,
      flags: ["secret_redacted"],
      // Inside an object the agent reads as a whole, nothing is left out.
      error: { code: "SCRIPT_ERROR", message: "m", untrusted: false, next: "n" },
      rows: { returned: 0 },
    });
    const counted = { ...view, rows: { read: { "ledger.listInvoices": 3 }, returned: 3, covered: 3 } };
    expect(agentView(counted as unknown as RunView).rows).toEqual({ read: { "ledger.listInvoices": 3 }, returned: 3, covered: 3 });
    expect(agentView({ ...view, rows: { read: {}, returned: null, covered: null } } as unknown as RunView)).not.toHaveProperty("rows");
  });

  it("search_tools declares inputs and checks when asked, and otherwise names them in one line", async () => {
    const client = await connect(agent);
    const declarationOf = async (args: Record<string, unknown>) => {
      const answer = (await client.callTool({ name: "search_tools", arguments: { detail: "full", ...args } })).structuredContent as {
        globals?: { name: string }[];
        declaration: string;
      };
      return { names: (answer.globals ?? []).map((g) => g.name), declaration: answer.declaration };
    };
    const pointer = (names: string, query: string) =>
      new RegExp(`\\n// Scripts also see ${names}: search_tools\\(\\{ query: "${query}", detail: "full" \\}\\) declares (it|them)\\.$`);

    const tools = await declarationOf({ query: "listInvoices" });
    expect(tools.names).toEqual([]);
    expect(tools.declaration).toContain("listInvoices(args:");
    expect(tools.declaration).not.toMatch(/declare const (inputs|checks)/);
    expect(tools.declaration).toMatch(pointer(`inputs \\(staged files\\) and checks \\(result checks Airlock decides\\)`, "inputs checks"));

    // Doing what the line says declares both.
    const followed = await declarationOf({ query: "inputs checks" });
    expect(followed.names).toEqual(["inputs", "checks"]);
    expect(followed.declaration).toMatch(/declare const inputs: AirlockInputs;[^]*declare const checks: AirlockChecks;$/);

    const checks = await declarationOf({ query: "refund checks" });
    expect(checks.names).toEqual(["checks"]);
    expect(checks.declaration).toContain("issueRefund(args:");
    expect(checks.declaration).toContain("declare const checks: AirlockChecks;");
    expect(checks.declaration).not.toContain("declare const inputs");
    expect(checks.declaration).toMatch(pointer(`inputs \\(staged files\\)`, "inputs"));

    // No words: everything, so nothing is left to point at.
    const all = await declarationOf({});
    expect(all.names).toEqual(["inputs", "checks"]);
    expect(all.declaration).toContain("declare const inputs: AirlockInputs;");
    expect(all.declaration).toContain("declare const checks: AirlockChecks;");
    expect(all.declaration).not.toContain("Scripts also see");

    // Globals belong to no server, like skills.
    expect((await declarationOf({ server: "ledger" })).names).toEqual([]);
    const summary = (await client.callTool({ name: "search_tools", arguments: { query: "input" } })).structuredContent as { globals?: unknown };
    expect(summary.globals).toEqual([{ name: "inputs", summary: "Files staged for this run (list_inputs names them)" }]);
  });

  it("classifies failures the same way on the tool path and the task path", async () => {
    const client = await connect(agent);
    // Arguments off the schema: a BAD_REQUEST result on the tool path (the model reads it), InvalidParams for a task, with the same message.
    for (const args of [{ purpose: "no code" }, { code: "return 1;", purpose: "x", extra: 1 }]) {
      const tool = await outcome(client.callTool({ name: "submit_run", arguments: args }));
      const task = await outcome(asTask(client, args));
      expect(tool).toMatchObject({ code: "BAD_REQUEST" });
      expect(task).toEqual({ protocol: ErrorCode.InvalidParams, message: `MCP error -32602: ${tool.message}` });
    }
    // An outcome to act on: a typed isError result on the tool path, InvalidRequest with the same code on the task path.
    const first = payload(await client.callTool({ name: "submit_run", arguments: { code: ESCALATED, purpose: "first", idempotencyKey: "same-key" } }));
    const firstRun = (first as { runId: string }).runId;
    const changed = { code: ESCALATED, purpose: "changed body", idempotencyKey: "same-key" };
    // The refusal names the run under the key, so an agent that lost the first answer can follow it.
    expect((payload(await client.callTool({ name: "submit_run", arguments: changed })) as unknown as { error: { next: string } }).error.next).toBe(
      `To follow the run submitted under this key, call get_run with runId ${firstRun}; to submit this request, use a new idempotencyKey.`,
    );
    const toolConflict = await outcome(client.callTool({ name: "submit_run", arguments: changed }));
    const taskConflict = await outcome(asTask(client, changed));
    expect(toolConflict).toMatchObject({ code: "CONFLICT" });
    expect(taskConflict).toEqual({ protocol: ErrorCode.InvalidRequest, message: expect.stringContaining(`CONFLICT: ${toolConflict.message}`) });

    // A missing scope: the same, and audited on both paths with the tool as the door.
    const refused = await connect(readOnly);
    const toolForbidden = await outcome(refused.callTool({ name: "submit_run", arguments: { code: ESCALATED, purpose: "x" } }));
    const taskForbidden = await outcome(asTask(refused, { code: ESCALATED, purpose: "x" }));
    expect(toolForbidden).toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("runs:submit") });
    expect(taskForbidden).toEqual({ protocol: ErrorCode.InvalidRequest, message: expect.stringContaining(`FORBIDDEN: ${toolForbidden.message}`) });
    expect((await eventsOf("auth.forbidden", readOnly.id)).map((e) => e.data)).toEqual([
      { scope: "runs:submit", door: "mcp:submit_run" },
      { scope: "runs:submit", door: "mcp:submit_run" },
    ]);

    // Unknown tools, and tasks of tools that do not run as tasks, are InvalidParams.
    expect(await outcome(client.callTool({ name: "no_such_tool", arguments: {} }))).toMatchObject({
      protocol: ErrorCode.InvalidParams,
      message: expect.stringContaining("Unknown tool"),
    });
    const getAsTask = client.request({ method: "tools/call", params: { name: "get_run", arguments: {}, task: {} } }, CreateTaskResultSchema);
    expect(await outcome(getAsTask)).toMatchObject({ protocol: ErrorCode.InvalidParams });
  });

  it("the mapper: the same class for every kind of failure on both paths; the unexpected is logged and never shown", () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const cases: [unknown, string, number | "result"][] = [
      [new McpError(ErrorCode.InvalidParams, "bad"), "protocol", ErrorCode.InvalidParams],
      [new AppError("bad_request", "purpose: required"), "malformed", "result"],
      [new AppError("payload_too_large", "code is too big"), "malformed", "result"],
      [new AppError("not_found", "No run"), "outcome", "result"],
      [new AppError("conflict", "Key reused"), "outcome", "result"],
      [new BudgetExceeded("Too many runs"), "outcome", "result"],
      [new Error("secret connection string"), "unexpected", ErrorCode.InternalError],
    ];
    for (const [error, kind, onToolPath] of cases) {
      expect(classifyMcpError(error).kind).toBe(kind);
      const task = requestRefusal(error, "submit_run task");
      if (onToolPath === "result") {
        const result = toolFailure(error);
        const body = JSON.parse((result.content[0] as { text: string }).text) as { error: { code: string; message: string; next: string } };
        expect(result.isError).toBe(true);
        expect(result.structuredContent).toBeUndefined();
        expect(body.error.next).toMatch(/^[A-Z].{20,}\.$/);
        // A task is created or refused: arguments a tool refuses are InvalidParams there, an outcome InvalidRequest.
        if (kind === "malformed") {
          expect(task.code).toBe(ErrorCode.InvalidParams);
          expect(task.message).toBe(body.error.message);
        } else {
          expect(task.code).toBe(ErrorCode.InvalidRequest);
          expect(task.message).toBe(`${body.error.code}: ${body.error.message} Next: ${body.error.next}`);
        }
      } else {
        let thrown: unknown;
        try {
          toolFailure(error);
        } catch (caught) {
          thrown = caught;
        }
        expect(thrown).toBeInstanceOf(ProtocolError);
        expect((thrown as ProtocolError).code).toBe(onToolPath);
        // Sent as is: the client's McpError adds the one "MCP error <code>: " prefix.
        expect((thrown as ProtocolError).message).not.toMatch(/^MCP error/);
        expect(task.code).toBe(onToolPath);
        expect(task.message).toBe((thrown as McpError).message);
      }
      expect(task.message).not.toContain("secret");
    }
    expect(classifyMcpError(new BudgetExceeded("x"))).toMatchObject({ code: "BUDGET_EXCEEDED", next: RUN_ERROR_RULES.BUDGET_EXCEEDED.next });
    expect(classifyMcpError(new AppError("forbidden", "x"))).toMatchObject({ code: "FORBIDDEN", next: expect.stringContaining("scope") });
    // A thrower that knows better says what to do next itself.
    expect(classifyMcpError(new AppError("conflict", "x", { next: "Do this instead." }))).toMatchObject({ code: "CONFLICT", next: "Do this instead." });
    expect(classifyMcpError(new BudgetExceeded("x", "Change the script."))).toMatchObject({ code: "BUDGET_EXCEEDED", next: "Change the script." });
    expect(logged).toHaveBeenCalledTimes(2);
    logged.mockRestore();
  });
});
