/**
 * The tool lifecycle in Chromium and through the MCP SDK's Client: three reviewed refunds with
 * other amounts are one pattern; an admin promotes it to a skill whose replay tests pass; two
 * reviewers publish it; two admins put a standing approval on it; the agent's run_skill inside
 * its bounds runs without review, outside them escalates, and after revocation escalates too.
 */
import { randomBytes } from "node:crypto";
import type { Browser, Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { fingerprintScript } from "../lib/script-fingerprint";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { approveInBrowser, createReviewers, type Reviewers } from "./reviewers";

type View = { runId: string; status: string; result?: unknown; error?: { code: string; message: string } };
type TextResult = { content: { type: string; text: string }[]; isError?: boolean };
const body = (result: unknown) => JSON.parse((result as TextResult).content[0]!.text) as View;

const suffix = randomBytes(3).toString("hex");
const skillName = `goodwillRefund${suffix}`;
const refund = (amountMinor: number, key: string) =>
  `const answer = await tools.ledger.issueRefund({ invoiceId: "inv_0041", amountMinor: ${amountMinor}, currency: "EUR", reason: "goodwill credit", idempotencyKey: "${key}" });
return { skillsSpecRefund: answer.refund.id, amountMinor: answer.refund.amountMinor };`;

async function settle(agent: Client, runId: string, leave: string[]): Promise<View> {
  for (let i = 0; i < 8; i++) {
    const view = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: i === 0 ? 0 : 15 } }));
    if (!leave.includes(view.status)) return view;
  }
  throw new Error(`run ${runId} stayed in ${leave.join("/")}`);
}

async function signedIn(browser: Browser, baseURL: string, email: string, password: string): Promise<Page> {
  const page = await (await browser.newContext({ baseURL })).newPage();
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(email, password);
  await page.waitForURL((url) => url.pathname === "/");
  return page;
}

test.describe.configure({ mode: "serial" });

test.describe("skills and standing approvals", () => {
  let reviewers: Reviewers;
  let versionUrl = "";

  test.beforeAll(async ({ state }) => {
    reviewers = await createReviewers(state.databaseUrl, "skills", 2);
  });

  test("three reviewed refunds with other amounts form one pattern", async ({ mcpClient: agent, browser, baseURL }) => {
    test.setTimeout(180_000);
    for (const [i, amount] of [101, 102, 103].entries()) {
      const submitted = body(
        await agent.callTool({ name: "submit_run", arguments: { code: refund(amount, `skills-e2e-${suffix}-${i}`), purpose: "Goodwill refund" } }),
      );
      expect(await settle(agent, submitted.runId, ["previewing"])).toMatchObject({ status: "pending_review" });
      await approveInBrowser(browser, baseURL!, reviewers, submitted.runId);
      expect(await settle(agent, submitted.runId, ["approved", "queued", "running"])).toMatchObject({ status: "succeeded", result: { amountMinor: amount } });
    }
  });

  test("an admin promotes the pattern to a skill whose replay tests pass, and two reviewers publish it", async ({ page, loginAs, browser, baseURL }) => {
    test.setTimeout(120_000);
    const { fingerprint } = fingerprintScript(refund(101, `skills-e2e-${suffix}-0`), "typescript", ["ledger.issueRefund"]);
    await loginAs("admin");
    await page.goto("/patterns");
    await page
      .getByTestId(`pattern-${fingerprint.slice(0, 12)}`)
      .getByRole("link", { name: "Draft a skill" })
      .click();
    await expect(page.getByRole("heading", { name: "Draft a skill" })).toBeVisible();
    await expect(page.getByTestId("skill-tests")).toContainText("3 tests");
    await expect(page.getByTestId("skill-code")).toContainText("args.amountMinor");
    await page.getByLabel("Name", { exact: true }).fill(skillName);
    await page.getByLabel("Description").fill("Refund a small goodwill amount on invoice inv_0041");
    await page.getByRole("button", { name: "Draft skill" }).click();
    await expect(page.getByRole("heading", { name: `${skillName} v1` })).toBeVisible();
    await expect(page.getByTestId("skill-status")).toHaveText("draft");
    versionUrl = new URL(page.url()).pathname;

    await page.getByRole("button", { name: "Run replay tests" }).click();
    await expect(page.getByTestId("test-report")).toContainText("3 passed, 0 failed", { timeout: 60_000 });

    for (const email of reviewers.emails) {
      const reviewer = await signedIn(browser, baseURL!, email, reviewers.password);
      await reviewer.goto(versionUrl);
      await reviewer.getByRole("button", { name: "Approve" }).click();
      await expect(reviewer.getByTestId("approvals")).toContainText(email === reviewers.emails[0] ? "1 of 2" : "2 of 2");
      await reviewer.context().close();
    }
    await page.reload();
    await expect(page.getByTestId("skill-status")).toHaveText("published");
  });

  test("inside a standing approval's bounds run_skill runs without review; outside, and once revoked, it escalates", async ({
    page,
    loginAs,
    mcpClient: agent,
    browser,
    baseURL,
    state,
  }) => {
    test.setTimeout(120_000);
    const found = await agent.callTool({ name: "search_tools", arguments: { query: skillName, detail: "full" } });
    expect((found as TextResult).content[0]!.text).toContain(`${skillName}(args: { amountMinor: number; idempotencyKey: string })`);

    await loginAs("admin");
    await page.goto(versionUrl);
    await page.getByLabel("Agents").fill(state.credentials.agent.name);
    await page
      .getByLabel("Bounds (JSON Schema)")
      .fill(JSON.stringify({ type: "object", properties: { amountMinor: { type: "integer", maximum: 5000 } }, required: ["amountMinor"] }));
    await page.getByLabel("Max uses").fill("5");
    await page.getByLabel("Reason").fill(`Goodwill up to 50 EUR (${suffix})`);
    await page.getByRole("button", { name: "Propose standing approval" }).click();
    const row = page.getByTestId("standing-row").filter({ hasText: suffix });
    await expect(row.getByTestId("state")).toHaveText("proposed");
    // The proposer cannot confirm their own proposal.
    await expect(row.getByRole("button", { name: "Confirm" })).toHaveCount(0);

    const second = state.credentials.users.filter((u) => u.role === "admin")[1]!;
    const admin2 = await signedIn(browser, baseURL!, second.email, second.password);
    await admin2.goto("/skills");
    const row2 = admin2.getByTestId("standing-row").filter({ hasText: suffix });
    await row2.getByRole("button", { name: "Confirm" }).click();
    await expect(row2.getByTestId("state")).toHaveText("active");

    const call = async (amountMinor: number, key: string) =>
      body(
        await agent.callTool({ name: "run_skill", arguments: { name: skillName, arguments: { amountMinor, idempotencyKey: `skills-e2e-${suffix}-${key}` } } }),
      );
    const inside = await call(1500, "inside");
    expect(inside).toMatchObject({ status: "succeeded", result: { amountMinor: 1500 } });
    await admin2.reload();
    await expect(row2.getByTestId("uses")).toHaveText("1 of 5");
    await expect(row2.getByTestId("remaining")).toHaveText("4");

    const outside = await call(6000, "outside");
    expect(["previewing", "pending_review"]).toContain(outside.status);

    await row2.getByRole("button", { name: "Revoke" }).click();
    await expect(row2.getByTestId("state")).toHaveText("revoked");
    const revoked = await call(1500, "after-revoke");
    expect(["previewing", "pending_review"]).toContain(revoked.status);
    await admin2.context().close();
  });
});
