/**
 * Admin pages in Chromium: agents (create → the token works over MCP → revoke → it stops),
 * policies (a draft is checked with line/column, replayed, proposed by one admin and approved by
 * a second), tools (a quarantined tool's change is shown; one admin asks, a second accepts).
 */
import type { Browser, Page } from "@playwright/test";
import pg from "pg";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";

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

test("an admin creates an agent whose token works, then revokes it", async ({ page, loginAs, connectMcp, request }) => {
  await loginAs("admin");
  await page.goto("/agents");
  await page.getByLabel("Name").fill("e2e-bot");
  await page.getByRole("button", { name: "Create agent" }).click();
  const token = (await page.getByTestId("new-agent-token").textContent())!.trim();
  expect(token).toMatch(/^alk_/);

  const client = await connectMcp(token);
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("submit_run");
  await client.close();

  page.once("dialog", (dialog) => void dialog.accept());
  await page.getByTestId("agent-e2e-bot").getByRole("button", { name: "Revoke" }).click();
  await expect(page.getByTestId("agent-e2e-bot")).toContainText("revoked");
  const refused = await request.post("/api/mcp", {
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    data: { jsonrpc: "2.0", id: 1, method: "tools/list" },
  });
  expect(refused.status()).toBe(401);
});

test("an admin checks a draft policy (errors with positions, replay) and proposes it; a second admin approves it", async ({
  page,
  loginAs,
  state,
  browser,
  baseURL,
}) => {
  await loginAs("admin");
  await page.goto("/policies");
  const editor = page.getByLabel("Draft (Cedar)");
  const published = await editor.inputValue();
  expect(published).toContain("allow-read-only-unregulated");

  await editor.fill(`${published}\npermit (principal, action, resource`);
  await page.getByRole("button", { name: "Check and replay" }).click();
  await expect(page.getByText(/line \d+, column \d+:/).first()).toBeVisible();

  // The published text unchanged is not a proposal (see below); a comment makes it one.
  await editor.fill(`${published}\n// Reviewed, unchanged, by the admins.\n`);
  await page.getByRole("button", { name: "Check and replay" }).click();
  await expect(page.getByText("The draft is valid.")).toBeVisible();
  await expect(page.getByText(/Replayed against \d+ recent proposal\(s\): 0 would be decided differently/)).toBeVisible();

  await page.getByRole("button", { name: "Propose" }).click();
  await expect(page.getByText(/Proposed as version (\d+)/)).toBeVisible();
  const version = (await page.getByText(/Proposed as version (\d+)/).textContent())!.match(/\d+/)![0];
  // Alone, the proposer only waits: the version decides nothing yet.
  await expect(page.getByText("You proposed this version; it is waiting for a second admin to approve it.")).toBeVisible();
  const proposedRow = page.getByRole("row").filter({ has: page.getByText(`v${version}`, { exact: true }) });
  await expect(proposedRow).toContainText("proposed");

  const second = await secondAdmin(browser, baseURL!, state.credentials.users);
  await second.goto("/policies");
  await second.getByRole("button", { name: `Approve and publish v${version}` }).click();
  const rows = second.getByRole("row").filter({ has: second.getByText("published", { exact: true }) });
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(`v${version}`);
  await expect(rows.first()).toContainText("admin2@airlock.local");
  await second.context().close();
});

test("a quarantined tool shows what changed; one admin asks to accept it and a second admin accepts it", async ({ page, loginAs, state, browser, baseURL }) => {
  const db = new pg.Client({ connectionString: state.databaseUrl });
  await db.connect();
  await db.query(
    `UPDATE "UpstreamTool" SET quarantined = true, "pinnedHash" = repeat('0', 64),
       "pinnedDefinition" = jsonb_build_object('description', 'List refunds (old wording).')
     WHERE name = 'listRefunds'`,
  );
  await db.end();

  await loginAs("admin");
  await page.goto("/tools");
  const card = page.getByRole("region", { name: "Changes to ledger.listRefunds" });
  await expect(card).toContainText("old wording");
  await expect(page.getByTestId("tool-ledger.listRefunds")).toContainText("quarantined");
  await page.getByRole("button", { name: "Ask to accept this definition" }).click();
  // Alone, the first admin changes nothing the broker trusts.
  await expect(page.getByText("You asked to accept this definition; it is waiting for a second admin.")).toBeVisible();
  await expect(page.getByTestId("tool-ledger.listRefunds")).toContainText("quarantined");

  const second = await secondAdmin(browser, baseURL!, state.credentials.users);
  await second.goto("/tools");
  await expect(second.getByText("admin@airlock.local asked to accept this definition.")).toBeVisible();
  await second.getByRole("button", { name: "Confirm acceptance" }).click();
  await expect(second.getByTestId("tool-ledger.listRefunds")).toContainText("pinned");
  await expect(second.getByRole("heading", { name: /Quarantined/ })).toHaveCount(0);
  await second.context().close();

  const audit = new pg.Client({ connectionString: state.databaseUrl });
  await audit.connect();
  await audit.query(`SELECT "airlock_audit_sequence"(1000)`); // chain what is staged first, as every reader of the log does
  const { rows } = await audit.query(
    `SELECT e.action, u.email FROM "AuditEvent" e JOIN "User" u ON u.id::text = e."actorId"
     WHERE e.action IN ('tool.acceptance_requested', 'tool.accepted') AND e.data->>'tool' = 'listRefunds' ORDER BY e.id`,
  );
  await audit.end();
  expect(rows).toEqual([
    { action: "tool.acceptance_requested", email: "admin@airlock.local" },
    { action: "tool.accepted", email: "admin2@airlock.local" },
  ]);
});
