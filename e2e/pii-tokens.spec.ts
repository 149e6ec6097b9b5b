/**
 * Personal data the model never reads, through the MCP endpoint and the console: an agent lists
 * customers (two reviewers approve in Chromium) and gets <NAME_n>/<EMAIL_n> tokens, no address; in
 * the same conversation it sends a reminder `to` one of those tokens, and the demo ledger's outbox
 * shows the real address; a token handed to a tool that is not classed pii is refused.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createUser } from "../lib/auth/users";
import type { Actor } from "../lib/contracts/scopes";
import { createPrismaClient } from "../lib/db";
import { generateLedgerData } from "../lib/demo/ledger/data";
import { afterPreview, expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { RunPage } from "./pages/run-page";

type View = { runId: string; status: string; result?: unknown; error?: { code: string; message: string }; plan?: { arguments: Record<string, unknown> }[] };

const system: Actor = { type: "system", name: "e2e-pii" };
const suffix = randomBytes(3).toString("hex");
const PASSWORD = `e2e-${randomBytes(12).toString("base64url")}`;
const reviewers = [`pii-a-${suffix}@airlock.local`, `pii-b-${suffix}@airlock.local`];
const provenance = { model: "e2e-model", prompt: "Remind overdue customers.", conversationId: `conv-pii-${suffix}` };

const view = (answer: unknown) => JSON.parse((answer as { content: { text: string }[] }).content[0]!.text) as View;

async function approveAll(browser: Browser, baseURL: string, runId: string): Promise<void> {
  for (const email of reviewers) {
    const context = await browser.newContext({ baseURL });
    const page = await context.newPage();
    const login = new LoginPage(page);
    await login.goto();
    await login.signIn(email, PASSWORD);
    await page.waitForURL((url) => url.pathname === "/");
    const run = new RunPage(page);
    await run.goto(runId);
    await run.decide("Approve");
    await expect(run.result).toBeVisible();
    await context.close();
  }
}

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
  await approveAll(browser, baseURL, submitted.runId);
  return { ...(await ended(agent, submitted.runId)), plan: planned.plan };
}

test.beforeAll(async ({ state }) => {
  const db = createPrismaClient(state.databaseUrl);
  try {
    await db.$transaction(async (tx) => {
      for (const email of reviewers) await createUser(tx, system, { email, role: "reviewer", password: PASSWORD });
    });
  } finally {
    await db.$disconnect();
  }
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
