/**
 * Personal data the model never reads, through the MCP endpoint and the console: an agent lists
 * customers (two reviewers approve in Chromium) and gets <NAME_n>/<EMAIL_n> tokens, no address; in
 * the same conversation it sends a reminder `to` one of those tokens, and the demo ledger's outbox
 * shows the real address; a token handed to a tool that is not classed pii is refused.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { generateLedgerData } from "../lib/demo/ledger/data";
import type { Browser } from "@playwright/test";
import { afterPreview, expect, test } from "./fixtures";
import { approveInBrowser, createReviewers, type Reviewers } from "./reviewers";

type View = { runId: string; status: string; result?: unknown; error?: { code: string; message: string }; plan?: { arguments: Record<string, unknown> }[] };

const suffix = randomBytes(3).toString("hex");
let reviewers: Reviewers;
const provenance = { model: "e2e-model", prompt: "Remind overdue customers.", conversationId: `conv-pii-${suffix}` };

const view = (answer: unknown) => JSON.parse((answer as { content: { text: string }[] }).content[0]!.text) as View;

async function ended(agent: Client, runId: string): Promise<View> {
  for (let i = 0; i < 6; i++) {
    const current = view(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 20 } }));
    if (!["approved", "queued", "running"].includes(current.status)) return current;
  }
  throw new Error(`run ${runId} did not end`);
}

async function submitAndApprove(agent: Client, browser: Browser, baseURL: string, code: string, purpose: string): Promise<View> {
  const submitted = view(await agent.callTool({ name: "submit_run", arguments: { code, purpose, language: "javascript", provenance } }));
  // A write is previewed first; a read waits for reviewers at once.
  expect(submitted.status === "previewing" ? await afterPreview(agent, submitted.runId) : submitted.status).toBe("pending_review");
  const planned = view(await agent.callTool({ name: "get_run", arguments: { runId: submitted.runId } }));
  await approveInBrowser(browser, baseURL, reviewers, submitted.runId);
  return { ...(await ended(agent, submitted.runId)), plan: planned.plan };
}

test.beforeAll(async ({ state }) => {
  reviewers = await createReviewers(state.databaseUrl, "pii");
});

test("customers reach the agent as tokens; a token sent back as `to` reaches the upstream as the address; to another tool it is refused", async ({
  browser,
  baseURL,
  state,
  mcpClient: agent,
}) => {
  test.setTimeout(180_000);
  const listed = await submitAndApprove(
    agent,
    browser,
    baseURL!,
    `// ${suffix}\nconst { customers } = await tools.ledger.listCustomers({ limit: 3 });\nreturn customers.map((c) => ({ id: c.id, name: c.name, email: c.email }));`,
    `List customers ${suffix}`,
  );
  expect(listed.status).toBe("succeeded");
  const rows = listed.result as { id: string; name: string; email: string }[];
  expect(rows).toHaveLength(3);
  for (const row of rows) expect(row).toMatchObject({ name: expect.stringMatching(/^<NAME_\d+>$/), email: expect.stringMatching(/^<EMAIL_\d+>$/) });
  const customers = generateLedgerData().customers;
  for (const customer of customers.slice(0, 3)) {
    expect(JSON.stringify(listed)).not.toContain(customer.email);
    expect(JSON.stringify(listed)).not.toContain(customer.name);
  }
  const target = customers.find((c) => c.id === rows[0]!.id)!;

  const sent = await submitAndApprove(
    agent,
    browser,
    baseURL!,
    `// ${suffix}\nreturn await tools.ledger.sendReminderEmail({ invoiceId: "inv_0002", to: ${JSON.stringify(rows[0]!.email)}, message: "Reminder ${suffix}" });`,
    `Remind ${suffix}`,
  );
  expect(sent.plan?.[0]?.arguments).toMatchObject({ to: rows[0]!.email });
  expect(sent).toMatchObject({ status: "succeeded", result: { to: rows[0]!.email } });
  const ledger = JSON.parse(readFileSync(join(state.dataDir, "ledger-state.json"), "utf8")) as { outbox: { to: string; message: string }[] };
  expect(ledger.outbox.find((m) => m.message === `Reminder ${suffix}`)).toMatchObject({ to: target.email });

  const leak = view(
    await agent.callTool({
      name: "submit_run",
      arguments: {
        code: `// ${suffix}\nconst page = await tools.ledger.listInvoices({ customerId: ${JSON.stringify(rows[0]!.email)}, limit: 1 });\nreturn page.invoices.length;`,
        purpose: `Leak ${suffix}`,
        language: "javascript",
        provenance,
      },
    }),
  );
  const refused = leak.status === "failed" ? leak : await ended(agent, leak.runId);
  expect(refused).toMatchObject({ status: "failed", error: { code: "CAPABILITY_DENIED", message: expect.stringContaining("not classed pii") } });
});
