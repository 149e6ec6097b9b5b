/**
 * Property-based fuzzing of the MCP door (fast-check, fixed seed, bounded runs): every agent tool
 * is called through the real server factory and the SDK's Client with hostile arguments — NUL,
 * lone surrogates, bidi and zero-width characters, 70 KB strings, huge and fractional numbers,
 * nesting 1,000 deep, prototype keys, wrong types, unknown fields — as JSON, as they arrive over
 * HTTP. Every answer must be typed: a tool result whose text is JSON (an outcome, isError or not)
 * or a protocol error that is not InternalError. Never a crash, never an untyped failure.
 * Runs execute (the in-process worker, a strict sandbox), so a script the fuzzer writes that
 * policy allows really runs.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, ErrorCode, GetTaskResultSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";
import { MAX_ARGUMENT_DEPTH } from "./server";

const SEED = 20261202;
const RUNS_PER_TOOL = 40;
let fixture: McpAgent;
let db: McpAgent["db"];
let client: Client;

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom(
    "",
    "\u0000",
    "a\u0000b",
    "\ud800",
    "x\udfffy",
    "\u202eevil\u202c",
    "\u200b\u200c\u200d\ufeff",
    "a\u2028b\u2029c",
    "𝕏💥👩🏽‍💻",
    "__proto__",
    "constructor",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "../../../../etc/passwd",
    "00000000-0000-4000-8000-000000000000",
    "A".repeat(70_000),
  ),
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -0, 0.5, 1e-320, 61, -1),
);
const deep = fc.integer({ min: 1, max: 1000 }).map((depth) => {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { x: value };
  return value;
});
const { value: hostileValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    deep,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(hostileString, tie("value"), { maxKeys: 4 }),
  ),
}));

/** Arguments shaped like the tool's (its own keys, hostile values), or anything at all. */
function argumentsFor(keys: readonly string[]) {
  const key = fc.oneof(fc.constantFrom(...keys), hostileString);
  return fc.oneof(
    fc.dictionary(key, hostileValue, { maxKeys: 6 }),
    hostileValue.map((value) => ({ [keys[0] ?? "x"]: value })),
  );
}

const TOOLS: Record<string, readonly string[]> = {
  search_tools: ["query", "server", "detail"],
  submit_run: ["code", "purpose", "language", "inputs", "idempotencyKey", "provenance"],
  call_tool: ["server", "tool", "arguments"],
  run_skill: ["name", "version", "arguments"],
  get_run: ["runId", "waitSeconds"],
  cancel_run: ["runId"],
  list_inputs: ["unexpected"],
  record_outcome: ["runId", "action", "detail"],
};

/** What an agent may get back: a typed result, or a protocol error other than an internal one. */
async function typedAnswer(name: string, args: unknown): Promise<void> {
  // As it arrives over HTTP: JSON.
  const sent = JSON.parse(JSON.stringify({ args }) ?? "{}") as { args?: unknown };
  try {
    const result = (await client.callTool({ name, arguments: sent.args as Record<string, unknown> })) as CallToolResult;
    const first = result.content[0];
    expect(first?.type, `${name}: a text result`).toBe("text");
    // JSON, or search_tools' declaration (its whole text at detail full, lib/mcp/define.ts textField).
    const declared = (result.structuredContent as { declaration?: string } | undefined)?.declaration;
    if (declared === undefined || declared !== (first as { text: string }).text) {
      expect(() => JSON.parse((first as { text: string }).text), `${name}: its text is JSON`).not.toThrow();
    }
  } catch (error) {
    expect(error, `${name}: a protocol error, not ${String(error)}`).toBeInstanceOf(McpError);
    expect((error as McpError).code, `${name}: ${(error as McpError).message}`).not.toBe(ErrorCode.InternalError);
  }
}

/** The refusal a tool answered with (an isError result, as arguments off its schema are). */
function refusalOf(result: unknown): { code: string; message: string } {
  const answer = result as CallToolResult;
  expect(answer.isError).toBe(true);
  return (JSON.parse((answer.content[0] as { text: string }).text) as { error: { code: string; message: string } }).error;
}

beforeAll(async () => {
  fixture = await connectMcpAgent("fuzzer", { executes: true });
  ({ db, client } = fixture);
}, 120_000);

afterAll(() => fixture?.close());

describe("the MCP tools under hostile arguments", () => {
  for (const [name, keys] of Object.entries(TOOLS)) {
    it(`${name}: every answer is typed`, { timeout: 240_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(argumentsFor(keys), (args) => typedAnswer(name, args)),
        { seed: SEED, numRuns: RUNS_PER_TOOL, endOnFailure: true },
      );
    });
  }

  it("every field alone holding U+0000 or a lone surrogate: every answer is typed, and search_tools names the field", { timeout: 120_000 }, async () => {
    for (const [name, keys] of Object.entries(TOOLS)) {
      for (const key of keys) for (const bad of ["a\u0000b", "\ud800"]) await typedAnswer(name, { [key]: bad });
    }
    // With its other fields valid, so the refusal is the string's own (call_tool needs all three).
    for (const [field, bad] of [
      ["server", { server: "ledger\u0000", tool: "listInvoices", arguments: {} }],
      ["tool", { server: "ledger", tool: "list\ud800Invoices", arguments: {} }],
    ] as const) {
      expect(refusalOf(await client.callTool({ name: "call_tool", arguments: bad }))).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringContaining(`${field}: contains`),
      });
    }
    expect(refusalOf(await client.callTool({ name: "search_tools", arguments: { query: "a\u0000b" } }))).toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("query: contains U+0000, which cannot be stored"),
    });
  });

  it(
    "submit_run with scripts that parse and carry hostile literals (escaped NUL, lone surrogates, deep nesting): every answer is typed",
    { timeout: 240_000 },
    async () => {
      const script = hostileValue.map((value) => `return ${JSON.stringify(value) ?? "null"};`);
      await fc.assert(
        fc.asyncProperty(script, hostileString, fc.constantFrom("typescript", "javascript"), (code, purpose, language) =>
          typedAnswer("submit_run", { code, purpose: `p ${purpose}`, language }),
        ),
        { seed: SEED, numRuns: RUNS_PER_TOOL, endOnFailure: true },
      );
    },
  );

  it("run_skill of a real published skill with hostile arguments: every answer is typed", { timeout: 240_000 }, async () => {
    const owner = await db.prisma.user.findUniqueOrThrow({ where: { email: "owner@example.com" } });
    const skill = await db.prisma.skill.create({ data: { name: "countInvoices" } });
    await db.prisma.skillVersion.create({
      data: {
        skillId: skill.id,
        version: 1,
        status: "published",
        description: "Invoices on one page",
        language: "javascript",
        code: "async (args) => {\nreturn (await tools.ledger.listInvoices({ limit: args.limit })).invoices.length;\n}",
        inputSchema: { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 500 } }, required: ["limit"], additionalProperties: false },
        outputSchema: { type: "integer" },
        fingerprint: "0".repeat(64),
        contentDigest: "0".repeat(64),
        draftedById: owner.id,
      },
    });
    const limit = fc.oneof(hostileString, fc.constantFrom(1e308, -1, 0.5, 501, 3), deep, fc.dictionary(hostileString, hostileValue, { maxKeys: 3 }));
    await fc.assert(
      fc.asyncProperty(limit, fc.option(hostileValue), (value, extra) =>
        typedAnswer("run_skill", { name: "countInvoices", arguments: extra === null ? { limit: value } : { limit: value, extra } }),
      ),
      { seed: SEED, numRuns: RUNS_PER_TOOL, endOnFailure: true },
    );
  });

  it("call_tool on a real read-only tool with hostile arguments: every answer is typed", { timeout: 240_000 }, async () => {
    const limit = fc.oneof(hostileString, fc.constantFrom(1e308, -1, 0.5, 501), deep, fc.dictionary(hostileString, hostileValue, { maxKeys: 3 }));
    await fc.assert(
      fc.asyncProperty(limit, hostileValue, (value, extra) =>
        typedAnswer("call_tool", { server: "ledger", tool: "listInvoices", arguments: { limit: value, status: extra } }),
      ),
      { seed: SEED, numRuns: RUNS_PER_TOOL, endOnFailure: true },
    );
  });
});

describe("the MCP door under malformed requests", () => {
  /** The protocol error a request is answered with (fails if it is answered at all). */
  async function refusal(request: Promise<unknown>): Promise<McpError> {
    const error = await request.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(McpError);
    return error as McpError;
  }
  const nested = (levels: number): unknown => {
    let value: unknown = "bottom";
    for (let i = 1; i < levels; i++) value = i % 2 ? [value] : { x: value };
    return { x: value };
  };

  it("arguments nested thousands of levels deep are InvalidParams on every tool, never a stack overflow", async () => {
    for (const name of Object.keys(TOOLS)) {
      for (const levels of [MAX_ARGUMENT_DEPTH + 1, 5_000, 50_000]) {
        const error = await refusal(client.callTool({ name, arguments: nested(levels) as Record<string, unknown> }));
        expect(error.code, `${name} at ${levels} levels: ${error.message}`).toBe(ErrorCode.InvalidParams);
        expect(error.message).toContain(`nested deeper than ${MAX_ARGUMENT_DEPTH} levels`);
      }
    }
    // Exactly at the limit (call_tool's arguments, then `arguments`, then the value): the call reaches the tool's schema.
    const atLimit = { server: "ledger", tool: "listInvoices", arguments: { limit: 5, status: nested(MAX_ARGUMENT_DEPTH - 2) } };
    await typedAnswer("call_tool", atLimit);
    const answered = await client.callTool({ name: "call_tool", arguments: atLimit }).catch((error: unknown) => error);
    expect(String((answered as McpError).message ?? "")).not.toContain("nested deeper");
  });

  it("a __proto__ key anywhere in the arguments is InvalidParams on every tool, and nothing is stored", async () => {
    const runs = await db.prisma.run.count();
    for (const name of Object.keys(TOOLS)) {
      for (const text of [
        '{"code":"return 1;","purpose":"p","__proto__":{"a":1}}',
        '{"server":"ledger","tool":"listInvoices","arguments":{"x":[{"__proto__":null}]}}',
      ]) {
        const error = await refusal(client.callTool({ name, arguments: JSON.parse(text) as Record<string, unknown> }));
        expect(error.code, `${name}: ${error.message}`).toBe(ErrorCode.InvalidParams);
        expect(error.message).toContain("__proto__ key");
      }
    }
    expect(await db.prisma.run.count()).toBe(runs);
  });

  it("params that fail the protocol's schema are InvalidParams in one line, on the SDK's own methods too", async () => {
    const cases: [string, Promise<unknown>, string][] = [
      [
        "tools/call",
        client.request({ method: "tools/call", params: { name: "get_run", arguments: "abc" } } as never, CallToolResultSchema),
        "params.arguments",
      ],
      ["tools/call", client.request({ method: "tools/call", params: { arguments: {} } } as never, CallToolResultSchema), "params.name"],
      ["tasks/get", client.request({ method: "tasks/get", params: {} } as never, GetTaskResultSchema), "params.taskId"],
    ];
    for (const [method, request, field] of cases) {
      const error = await refusal(request);
      expect(error.code, error.message).toBe(ErrorCode.InvalidParams);
      expect(error.message).toContain(`Invalid ${method} request: ${field}: `);
      expect(error.message).not.toContain("\n");
    }
    // A well-formed request the SDK's own handler refuses keeps its code, with the prefix once.
    const unknownTask = await refusal(client.request({ method: "tasks/get", params: { taskId: "no-such-task" } }, GetTaskResultSchema));
    expect(unknownTask.code).toBe(ErrorCode.InvalidParams);
    expect(unknownTask.message).toMatch(/^MCP error -32602: (?!MCP error)/);
  });
});
