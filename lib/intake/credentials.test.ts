/**
 * Credentials in what an agent submits, through the real MCP server and SDK client on PostgreSQL:
 * a credential written in a script, in call_tool's arguments or in a purpose is refused before
 * anything is stored, naming its kind (and line) but never quoting it, and the refusal is recorded
 * without it; one in the provenance (the agent's conversation) is redacted and the run stored.
 * The attack each test makes: get a credential into the run's row or the append-only audit log.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectMcpAgent, type McpAgent } from "@/lib/testing/mcp-agent";

// Built at run time, so this file does not carry them whole.
const STRIPE = ["sk", "live", "4eC39HqLyjWDarjtT1zdp7dc"].join("_");
const AWS = "AKIA" + "IOSFODNN7EXAMPLE";
const PEM = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi", "-----END RSA PRIVATE KEY-----"].join("\n");
const POSTGRES = "postgres://app:" + "S3cr3tPassw0rd" + "@db.internal:5432/prod";
const FULL_WIDTH_STRIPE = STRIPE.replace(/[a-z_]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));

let fixture: McpAgent;
/** Reads customers (pii): policy sends it to reviewers, so submit_run answers at once (nothing executes here). */
const PII_READ = "const page = await tools.ledger.listCustomers({ limit: 2 });\nreturn page.customers.length;";

beforeAll(async () => {
  fixture = await connectMcpAgent("credentials", { executes: false });
}, 120_000);
afterAll(() => fixture?.close());

/** Every text column and event PostgreSQL holds, searched for `needle`. */
async function stored(needle: string): Promise<string[]> {
  const rows = await fixture.db.prisma.$queryRaw<{ place: string }[]>`
    SELECT 'Run ' || id AS place FROM "Run" WHERE row_to_json("Run")::text LIKE ${`%${needle}%`}
    UNION ALL SELECT 'AuditEvent ' || id FROM "AuditEvent" WHERE data::text LIKE ${`%${needle}%`}
    UNION ALL SELECT 'AuditPending ' || id FROM "AuditPending" WHERE data::text LIKE ${`%${needle}%`}`;
  return rows.map((r) => r.place);
}

/** The refusal a tool answered with: arguments it refuses are an isError result the model reads (SEP-1303). */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  const result = (await call) as CallToolResult;
  expect(result.isError).toBe(true);
  return (JSON.parse((result.content[0] as { text: string }).text) as { error: { code: string; message: string } }).error;
}

describe("a credential in what an agent writes is refused, and stored nowhere", () => {
  it.each([
    ["a Stripe key", STRIPE, "stripe_key"],
    ["an AWS access key id", AWS, "aws_access_key"],
    ["a private key", PEM, "private_key"],
    ["a connection string with its password", POSTGRES, "connection_string"],
    ["a full-width Stripe key (NFKC reads it as the key)", FULL_WIDTH_STRIPE, "stripe_key"],
    ["a Stripe key split by a zero-width joiner (invisible)", `${STRIPE.slice(0, 12)}\u200d${STRIPE.slice(12)}`, "stripe_key"],
  ])("in a script: %s", async (_, secret, kind) => {
    const runsBefore = await fixture.db.prisma.run.count();
    const code = `const note = "start";\nconst label = ${JSON.stringify(secret)};\nreturn (await tools.ledger.listInvoices({ limit: 1 })).invoices.length;`;
    const error = await refusal(fixture.client.callTool({ name: "submit_run", arguments: { code, purpose: "count invoices" } }));
    expect(error.code).toBe("BAD_REQUEST");
    expect(error.message).toContain(`code: line 2 holds what looks like a credential (${kind})`);
    expect(error.message).toContain("Nothing was stored");
    expect(error.message).not.toContain(secret.slice(4, 16));
    expect(await fixture.db.prisma.run.count()).toBe(runsBefore);
    expect(await stored(secret.slice(4, 16))).toEqual([]);
    const refused = await fixture.db.prisma.auditPending.findFirst({ where: { action: "run.refused" }, orderBy: { id: "desc" } });
    expect(refused?.data).toMatchObject({ reason: "bad_request", message: expect.stringContaining(kind) });
  });

  it("in a purpose", async () => {
    const error = await refusal(
      fixture.client.callTool({ name: "submit_run", arguments: { code: "return 1;", purpose: `check the account with token=${STRIPE}` } }),
    );
    expect(error.message).toContain("purpose: it holds what looks like a credential (stripe_key)");
    expect(await stored(STRIPE)).toEqual([]);
  });

  it("in call_tool's arguments, which a direct call writes into its script", async () => {
    const error = await refusal(
      fixture.client.callTool({ name: "call_tool", arguments: { server: "ledger", tool: "listInvoices", arguments: { customerId: AWS } } }),
    );
    expect(error.code).toBe("BAD_REQUEST");
    expect(error.message).toContain("arguments: they hold what looks like a credential (aws_access_key)");
    expect(await stored(AWS)).toEqual([]);
  });

  it.each([
    ["as the idempotency key", { idempotencyKey: STRIPE }, "idempotencyKey: it holds what looks like a credential (stripe_key)"],
    ["as an input's name", { inputs: [STRIPE] }, "inputs.0: it holds what looks like a credential (stripe_key)"],
  ])("%s", async (_what, extra, message) => {
    const error = await refusal(fixture.client.callTool({ name: "submit_run", arguments: { code: PII_READ, purpose: "one", ...extra } }));
    expect(error.message).toContain(message);
    expect(await stored(STRIPE)).toEqual([]);
  });

  it("quoted by a refusal (an unknown key, an unknown tool): the refusal is recorded with it redacted", async () => {
    await refusal(fixture.client.callTool({ name: "submit_run", arguments: { code: PII_READ, purpose: "one", [STRIPE]: 1 } }));
    await refusal(fixture.client.callTool({ name: "call_tool", arguments: { server: "ledger", tool: STRIPE, arguments: {} } }));
    expect(await fixture.db.prisma.auditPending.count({ where: { action: "run.refused" } })).toBeGreaterThan(0);
    expect(await stored(STRIPE)).toEqual([]);
  });

  it("and the same script without it is stored", async () => {
    const result = await fixture.client.callTool({ name: "submit_run", arguments: { code: PII_READ, purpose: "one" } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ runId: expect.any(String) });
  });
});

describe("a credential in the provenance (the agent's conversation) is redacted, and the run stored", () => {
  it("the prompt's cap holds for the prompt as stored: a redaction can be longer than what it replaces", async () => {
    const prompt = "postgres://a:b@c ".repeat(1_900); // 32,300 bytes as sent; about 55,000 redacted
    const error = await refusal(fixture.client.callTool({ name: "submit_run", arguments: { code: PII_READ, purpose: "one", provenance: { prompt } } }));
    expect(error.message).toMatch(/provenance\.prompt: \d+ bytes; the limit is 32768 bytes/);
  });

  it("the prompt and context keep everything but the credential", async () => {
    const result = await fixture.client.callTool({
      name: "submit_run",
      arguments: {
        code: PII_READ,
        purpose: "one",
        provenance: { model: "m", prompt: `Here is my key ${STRIPE}, sum the invoices`, context: `db: ${POSTGRES}` },
      },
    });
    const { runId } = result.structuredContent as { runId: string };
    const run = await fixture.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.provenance).toEqual({
      model: "m",
      prompt: "Here is my key [REDACTED:stripe_key], sum the invoices",
      context: "db: [REDACTED:connection_string]",
    });
    expect(await stored(STRIPE)).toEqual([]);
    expect(await stored("S3cr3tPassw0rd")).toEqual([]);
  });
});
