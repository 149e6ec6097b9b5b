/**
 * Admin pages in Chromium: agents (create → the token works over MCP → revoke → it stops),
 * policies (a draft is checked with line/column, replayed, published), tools (a quarantined tool's
 * change is shown and accepted).
 */
import pg from "pg";
import { expect, test } from "./fixtures";

test("an admin creates an agent whose token works, then revokes it", async ({ page, loginAs, connectMcp, request }) => {
  await loginAs("admin");
  await page.goto("/agents");
  await page.getByLabel("Name").fill("e2e-bot");
  await page.getByRole("button", { name: "Create agent" }).click();
  const token = (await page.getByTestId("new-agent-token").textContent())!.trim();
  expect(token).toMatch(/^alk_/);

  const client = await connectMcp(token);
  expect((await client.listTools()).tools.length).toBe(5);
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

test("an admin checks a draft policy (errors with positions, replay) and publishes it", async ({ page, loginAs }) => {
  await loginAs("admin");
  await page.goto("/policies");
  const editor = page.getByLabel("Draft (Cedar)");
  const published = await editor.inputValue();
  expect(published).toContain("allow-read-only-unregulated");

  await editor.fill(`${published}\npermit (principal, action, resource`);
  await page.getByRole("button", { name: "Check and replay" }).click();
  await expect(page.getByText(/line \d+, column \d+:/).first()).toBeVisible();

  await editor.fill(published);
  await page.getByRole("button", { name: "Check and replay" }).click();
  await expect(page.getByText("The draft is valid.")).toBeVisible();
  await expect(page.getByText(/Replayed against \d+ recent proposal\(s\): 0 would be decided differently/)).toBeVisible();

  await page.getByRole("button", { name: "Publish" }).click();
  await expect(page.getByText(/Published as version (\d+)/)).toBeVisible();
  const version = (await page.getByText(/Published as version (\d+)/).textContent())!.match(/\d+/)![0];
  const rows = page.getByRole("row").filter({ has: page.getByText("published", { exact: true }) });
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(`v${version}`);
});

test("a quarantined tool shows what changed and an admin accepts it", async ({ page, loginAs, state }) => {
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
  await page.getByRole("button", { name: "Accept this definition" }).click();
  await expect(page.getByTestId("tool-ledger.listRefunds")).toContainText("pinned");
  await expect(page.getByRole("heading", { name: /Quarantined/ })).toHaveCount(0);
});
