/**
 * Tools trusted by people, in Chromium: a tool nobody accepted (what an upstream adds after the
 * first start) is shown as new and stays quarantined until a second admin accepts it; an override
 * of a tool's hints changes nothing until a second admin confirms it, then policy uses it and the
 * page names who proposed and who confirmed it. The e2e server serves the demo ledger only, so the
 * new tool is made by resetting a ledger tool's pin to "never accepted" in the database; that the
 * broker refuses it and policy denies it is proven on real upstreams in lib/broker/trust.test.ts.
 */
import type { Browser, Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import pg from "pg";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";

type TextResult = { content: { type: string; text: string }[] };

/** A second browser signed in as the seeded second admin (close its context after). */
async function secondAdmin(browser: Browser, baseURL: string, users: { email: string; password: string }[]): Promise<Page> {
  const admin2 = users.find((u) => u.email === "admin2@airlock.local");
  if (!admin2) throw new Error("no seeded admin2@airlock.local");
  const page = await (await browser.newContext({ baseURL })).newPage();
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(admin2.email, admin2.password);
  await page.waitForURL((url) => url.pathname === "/");
  return page;
}

/** Submits a run reading one customer; returns the ids of the policies that decided it, and cancels it. */
async function decidingPolicies(client: Client, label: string): Promise<string[]> {
  const submitted = (await client.callTool({
    name: "submit_run",
    arguments: { code: `// ${label}\nreturn await tools.ledger.getCustomer({ customerId: "cus_001" });`, purpose: `Override check: ${label}` },
  })) as TextResult;
  const run = JSON.parse(submitted.content[0]!.text) as { runId: string; reasons: { policyId: string }[] };
  await client.callTool({ name: "cancel_run", arguments: { runId: run.runId } });
  return run.reasons.map((r) => r.policyId);
}

async function propose(page: Page, tool: string, readOnly: "as the upstream says" | "true" | "false") {
  const form = page.getByRole("form", { name: "Propose an override for ledger" });
  await form.getByLabel("Tool").selectOption(tool);
  await form.getByLabel("Read-only").selectOption({ label: readOnly });
  await form.getByRole("button", { name: "Propose override" }).click();
  await expect(form.getByRole("status")).toContainText("Proposed");
}

test("a new upstream tool stays quarantined until accepted", async ({ page, loginAs, state, browser, baseURL }) => {
  const db = new pg.Client({ connectionString: state.databaseUrl });
  await db.connect();
  await db.query(
    `UPDATE "UpstreamTool" SET quarantined = true, "pinnedHash" = NULL, "pinnedDefinition" = NULL, "acceptedAt" = NULL, "acceptedBy" = '{}'
     WHERE name = 'listCustomers'`,
  );
  await db.end();

  await loginAs("admin");
  await page.goto("/tools");
  const row = page.getByTestId("tool-ledger.listCustomers");
  await expect(row).toContainText("quarantined: new");
  await expect(row).toContainText("Not accepted");
  await expect(page.getByText("A new tool: no definition of it was ever accepted.")).toBeVisible();
  await expect(page.getByRole("region", { name: "Changes to ledger.listCustomers" })).toContainText("List customers");
  // Tools accepted at first start say so.
  await expect(page.getByTestId("tool-ledger.listInvoices")).toContainText("Accepted by system:");

  await page.getByRole("button", { name: "Ask to accept this definition" }).click();
  await expect(page.getByText("You asked to accept this definition; it is waiting for a second admin.")).toBeVisible();
  await expect(row).toContainText("quarantined: new");

  const second = await secondAdmin(browser, baseURL!, state.credentials.users);
  await second.goto("/tools");
  await expect(second.getByText("admin@airlock.local asked to accept this definition.")).toBeVisible();
  await second.getByRole("button", { name: "Confirm acceptance" }).click();
  const accepted = second.getByTestId("tool-ledger.listCustomers");
  await expect(accepted).toContainText("pinned");
  await expect(accepted).toContainText("Accepted by admin@airlock.local and admin2@airlock.local");
  await second.context().close();

  const audit = new pg.Client({ connectionString: state.databaseUrl });
  await audit.connect();
  await audit.query(`SELECT "airlock_audit_sequence"(1000)`); // chain what is staged first, as every reader of the log does
  const { rows } = await audit.query(
    `SELECT e.action, u.email FROM "AuditEvent" e JOIN "User" u ON u.id::text = e."actorId"
     WHERE e.action IN ('tool.acceptance_requested', 'tool.accepted') AND e.data->>'tool' = 'listCustomers' ORDER BY e.id`,
  );
  await audit.end();
  expect(rows).toEqual([
    { action: "tool.acceptance_requested", email: "admin@airlock.local" },
    { action: "tool.accepted", email: "admin2@airlock.local" },
  ]);
});

test("an override of a tool's hints needs a second admin; then policy uses it and the page names both", async ({
  page,
  loginAs,
  state,
  browser,
  baseURL,
  mcpClient,
}) => {
  await loginAs("admin");
  await page.goto("/tools");
  await propose(page, "getCustomer", "false");
  await expect(page.getByText("You proposed this override; it is waiting for a second admin.")).toBeVisible();
  // Alone, the proposal changes nothing: the tool still counts as read-only.
  await expect(page.getByTestId("tool-ledger.getCustomer")).not.toContainText("override");
  expect(await decidingPolicies(mcpClient, "one admin")).not.toContain("review-writes");

  const second = await secondAdmin(browser, baseURL!, state.credentials.users);
  await second.goto("/tools");
  await expect(second.getByText("admin@airlock.local proposed")).toBeVisible();
  await second.getByRole("button", { name: "Confirm override" }).click();
  const row = second.getByTestId("tool-ledger.getCustomer");
  await expect(row).toContainText("readOnly: false");
  await expect(row).toContainText("(upstream: true)");
  await expect(row).toContainText("Override proposed by admin@airlock.local, confirmed by admin2@airlock.local");
  expect(await decidingPolicies(mcpClient, "two admins")).toContain("review-writes");

  // Put the upstream's claims back, with four eyes again, for the specs that follow.
  await propose(second, "getCustomer", "as the upstream says");
  await page.goto("/tools");
  await page.getByRole("button", { name: "Confirm override" }).click();
  await expect(page.getByTestId("tool-ledger.getCustomer")).not.toContainText("readOnly: false");
  await second.context().close();
  expect(await decidingPolicies(mcpClient, "restored")).not.toContain("review-writes");
});
