/**
 * The console as a new user meets it: the dashboard before the first run, the runs list's filters
 * (in the URL, refused by name when malformed), a risk label that follows what policy decided,
 * the Policies page read by compliance staff, a failed sign-in that keeps the email, no favicon
 * error in the console, and one 404 page with the navigation for people signed in.
 *
 * Runs are submitted by the real MCP SDK client as the demo agent and as an agent this spec
 * creates; every script carries this spec's suffix, so reruns never trip the loop breaker.
 * Screenshots go to the test's output directory (test-results/, not committed).
 */
import { randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Page } from "@playwright/test";
import pg from "pg";
import { createAgent } from "../lib/auth/agents";
import type { Actor } from "../lib/contracts/scopes";
import { createPrismaClient } from "../lib/db";
import { afterPreview, expect, test } from "./fixtures";

type TextResult = { content: { type: string; text: string }[] };

const suffix = randomBytes(3).toString("hex");
const system: Actor = { type: "system", name: "e2e-console-polish" };
const RISK_RANK = { blocked: 3, high: 2, medium: 1, low: 0 } as const;

async function submit(client: Client, code: string, purpose: string, language: "typescript" | "javascript" = "typescript") {
  const result = (await client.callTool({ name: "submit_run", arguments: { code: `// e2e ${suffix}\n${code}`, purpose, language } })) as TextResult;
  return JSON.parse(result.content[0]!.text) as { runId: string; status: string; decision: string; approvalsRequired: number };
}

const utcDay = (offsetDays = 0) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/** Console errors and failed responses of a page, from now on. */
function watchErrors(page: Page): () => string[] {
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) errors.push(`${response.status()} ${new URL(response.url()).pathname}`);
  });
  return () => [...errors];
}

test("dashboard: before the first run the chart says No runs yet, with the MCP endpoint; then it draws the runs", async ({
  page,
  loginAs,
  state,
  baseURL,
  mcpClient,
}, testInfo) => {
  const db = new pg.Client({ connectionString: state.databaseUrl });
  await db.connect();
  const runsBefore = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM "Run"`)).rows[0]!.n);
  await db.end();
  await loginAs("reviewer");
  const chart = page.getByRole("img", { name: "Runs by outcome per day, last 14 days" });
  // Run alone (npx playwright test e2e/console-polish.spec.ts), this test meets the fresh database.
  if (runsBefore === 0) {
    const empty = page.getByTestId("no-runs-yet");
    await expect(empty).toContainText("No runs yet");
    await expect(empty).toContainText(`${baseURL}/api/mcp`);
    await expect(empty).toContainText(`claude mcp add --transport http airlock ${baseURL}/api/mcp`);
    await expect(empty).toContainText("token was printed when Airlock first started");
    await expect(chart).toHaveCount(0);
    await page.screenshot({ path: testInfo.outputPath("dashboard-no-runs.png"), fullPage: true });
  }
  await submit(mcpClient, "return 1;", `Dashboard run ${suffix}`);
  await page.reload();
  await expect(chart).toBeVisible();
  await expect(page.getByTestId("no-runs-yet")).toHaveCount(0);
  await page.screenshot({ path: testInfo.outputPath("dashboard.png"), fullPage: true });
});

test.describe("runs list filters", () => {
  const other = { name: `polish-${suffix}`, token: "" };
  const runs = { allowed: "", denied: "", other: "" };

  test.beforeAll(async ({ state, connectMcp }) => {
    const db = createPrismaClient(state.databaseUrl);
    try {
      other.token = (await db.$transaction((tx) => createAgent(tx, system, { name: other.name, ownerEmail: "admin@airlock.local" }))).token;
    } finally {
      await db.$disconnect();
    }
    const demo = await connectMcp();
    const allowed = await submit(demo, "return 2;", `Allowed run ${suffix}`);
    const denied = await submit(demo, 'return eval("1");', `Denied run ${suffix}`, "javascript");
    const fromOther = await submit(await connectMcp(other.token), "return 3;", `Other agent's run ${suffix}`);
    expect([allowed.decision, denied.decision, fromOther.decision]).toEqual(["allow", "deny", "allow"]);
    Object.assign(runs, { allowed: allowed.runId, denied: denied.runId, other: fromOther.runId });
  });

  const row = (page: Page, runId: string) => page.getByTestId(`run-row-${runId}`);

  test("status, agent, decision and dates narrow the list and stay in the URL", async ({ page, loginAs }, testInfo) => {
    await loginAs("compliance");
    await page.goto("/runs");
    for (const id of Object.values(runs)) await expect(row(page, id)).toBeVisible();

    await page.getByLabel("Status", { exact: true }).selectOption("denied");
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    // The form sends every field; the page keeps only the ones set.
    await expect(page).toHaveURL(/\/runs\?status=denied$/);
    await expect(row(page, runs.denied)).toBeVisible();
    await expect(row(page, runs.denied).getByTestId("decision")).toHaveText("deny");
    await expect(row(page, runs.allowed)).toHaveCount(0);
    await expect(page.getByLabel("Status", { exact: true })).toHaveValue("denied");

    await page.goto(`/runs?agent=${other.name}`);
    await expect(row(page, runs.other)).toBeVisible();
    await expect(row(page, runs.allowed)).toHaveCount(0);
    await expect(row(page, runs.denied)).toHaveCount(0);
    await expect(page.getByLabel("Agent", { exact: true })).toHaveValue(other.name);

    await page.goto("/runs?agent=demo-agent&decision=allow");
    await expect(row(page, runs.allowed)).toBeVisible();
    await expect(row(page, runs.denied)).toHaveCount(0);
    await expect(row(page, runs.other)).toHaveCount(0);

    await page.goto(`/runs?from=${utcDay()}&to=${utcDay()}`);
    for (const id of Object.values(runs)) await expect(row(page, id)).toBeVisible();
    await page.getByLabel("Submitted from (UTC day)", { exact: true }).fill(utcDay(1));
    await page.getByLabel("to (UTC day, included)", { exact: true }).fill(utcDay(1));
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`/runs\\?from=${utcDay(1)}&to=${utcDay(1)}$`));
    await expect(page.getByText("No run matches these filters")).toBeVisible();
    await page.screenshot({ path: testInfo.outputPath("runs-no-match.png"), fullPage: true });

    await page.getByRole("link", { name: "Clear filters" }).click();
    await expect(page).toHaveURL(/\/runs$/);
    await expect(row(page, runs.denied)).toBeVisible();
    await expect(page.getByLabel("Submitted from (UTC day)", { exact: true })).toHaveValue("");
    await page.goto("/runs?status=denied");
    await page.screenshot({ path: testInfo.outputPath("runs-filtered.png"), fullPage: true });
  });

  test("a malformed filter is refused on the page by name, never with a 500", async ({ page, loginAs }, testInfo) => {
    await loginAs("compliance");
    const cases = [
      ["/runs?status=bogus", /status: must be one of submitted, .*cancelled/],
      ["/runs?decision=maybe", /decision: must be one of allow, escalate, deny/],
      ["/runs?from=2026-02-30", /from: must be a calendar day like 2026-11-30/],
      [`/runs?from=${utcDay()}&to=${utcDay(-1)}`, /to: must not be before from/],
      ["/runs?status=denied&status=failed", /status: give it once/],
      ["/runs?sort=oldest", /sort: not a filter of this list/],
    ] as const;
    for (const [path, message] of cases) {
      const response = await page.goto(path);
      expect(response?.status(), path).toBe(200);
      await expect(page.getByTestId("filter-error"), path).toHaveText(message);
      await expect(page.locator("table"), path).toHaveCount(0);
    }
    await page.goto("/runs?status=bogus");
    await page.screenshot({ path: testInfo.outputPath("runs-bad-filter.png"), fullPage: true });
  });
});

test("risk follows policy: a read of pii that needs two approvals is high risk on its page and leads the queue; denied code is blocked", async ({
  page,
  loginAs,
  mcpClient,
}, testInfo) => {
  const piiRead = await submit(
    mcpClient,
    "const page = await tools.ledger.listCustomers({ limit: 5 });\nreturn page.customers.length;",
    `Count customers ${suffix}`,
  );
  expect(piiRead).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
  expect(await afterPreview(mcpClient, piiRead.runId)).toBe("pending_review");
  const typeError = await submit(mcpClient, 'const n: number = "not a number";\nreturn n;', `Type error ${suffix}`);
  expect(typeError).toMatchObject({ decision: "escalate", approvalsRequired: 1 });
  expect(await afterPreview(mcpClient, typeError.runId)).toBe("pending_review");
  const denied = await submit(mcpClient, 'return eval("2");', `Eval ${suffix}`, "javascript");
  expect(denied.decision).toBe("deny");

  await loginAs("reviewer");
  await page.goto(`/runs/${piiRead.runId}`);
  await expect(page.getByTestId("risk")).toHaveText("high risk");
  await page.screenshot({ path: testInfo.outputPath("risk-run-high.png") });
  await page.goto(`/runs/${typeError.runId}`);
  await expect(page.getByTestId("risk")).toHaveText("medium risk");
  await page.goto(`/runs/${denied.runId}`);
  await expect(page.getByTestId("risk")).toHaveText("blocked");

  await page.goto("/queue");
  await expect(page.getByTestId(`queue-row-${piiRead.runId}`).getByTestId("risk")).toHaveText("high risk");
  await expect(page.getByTestId(`queue-row-${typeError.runId}`).getByTestId("risk")).toHaveText("medium risk");
  const order = await page
    .locator('[data-testid^="queue-row-"]')
    .evaluateAll((rows) =>
      rows.map((row) => [row.getAttribute("data-testid")!.slice("queue-row-".length), row.querySelector("[data-risk]")!.getAttribute("data-risk")!]),
    );
  const ranks = order.map(([, level]) => RISK_RANK[level as keyof typeof RISK_RANK]);
  expect(ranks).toEqual([...ranks].sort((a, b) => b - a));
  const ids = order.map(([id]) => id);
  expect(ids.indexOf(piiRead.runId)).toBeLessThan(ids.indexOf(typeError.runId));
  await page.screenshot({ path: testInfo.outputPath("risk-queue.png"), fullPage: true });
});

test("policies page: each policy with its id, effect, approvals and reason; no developer notes; the text folds and wraps on a phone", async ({
  page,
  loginAs,
}, testInfo) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await loginAs("compliance");
  await page.goto("/policies");
  const regulated = page.getByTestId("policy-review-regulated-data");
  await expect(regulated.getByTestId("effect")).toHaveText("permit");
  await expect(regulated).toContainText("needs 2 approvals (role: reviewer)");
  await expect(regulated.getByTestId("reason")).toHaveText(
    "The script touches pii, financial or phi data (through its inputs or its tools); two reviewers must approve.",
  );
  const critical = page.getByTestId("policy-deny-critical-findings");
  await expect(critical.getByTestId("effect")).toHaveText("forbid");
  await expect(critical).toContainText("denies the run");
  await expect(page.getByTestId("policy-allow-read-only-unregulated")).toContainText("allows the run");
  // Nothing developer-facing, in the list or in the folded text (textContent includes it).
  await expect(page.locator("main")).not.toContainText(/\blib\/|\.ts\b|policy schema/);

  const text = page.getByRole("region", { name: /^Published policy v\d+$/ });
  await expect(text).toBeHidden();
  await page.getByText("Policy text (Cedar), as published").click();
  await expect(text).toBeVisible();
  await expect(text).toContainText('@id("review-hidden-code")');
  const { scrollWidth, clientWidth } = await text.evaluate((element) => ({ scrollWidth: element.scrollWidth, clientWidth: element.clientWidth }));
  expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
  expect(await page.evaluate(() => document.scrollingElement!.scrollWidth <= window.innerWidth)).toBe(true);
  await page.screenshot({ path: testInfo.outputPath("policies-390.png"), fullPage: true });
});

test("sign-in: a failed attempt keeps the email; no console error or failed request (favicon) on the login page or a console page", async ({
  page,
  loginPage,
  loginAs,
  request,
}, testInfo) => {
  const errors = watchErrors(page);
  const email = `nobody-${suffix}@airlock.local`;
  await loginPage.goto();
  await loginPage.signIn(email, "not-a-password-here");
  // The refusal of the sign-in itself is not an error of the page: only what the page loads counts.
  await expect(loginPage.error).toHaveText("Wrong email or password.");
  await expect(page.getByLabel("Email")).toHaveValue(email);
  await page.screenshot({ path: testInfo.outputPath("login-failed.png") });
  await expect(page.locator('link[rel="icon"]').first()).toHaveAttribute("href", /\/icon\.svg/);

  await loginAs("reviewer");
  await page.goto("/runs");
  await expect(page.getByRole("heading", { name: "Runs" })).toBeVisible();
  await page.waitForLoadState("networkidle");
  expect(errors()).toEqual([]);

  const favicon = await request.get("/favicon.ico");
  expect(favicon.status()).toBe(200);
  expect(favicon.headers()["content-type"]).toMatch(/image\//);
  expect((await request.get((await page.locator('link[rel="icon"]').first().getAttribute("href"))!)).status()).toBe(200);
});

test("404: an unknown address and an unknown run both keep the console's navigation and link back to the dashboard", async ({
  page,
  loginAs,
  browser,
  baseURL,
}, testInfo) => {
  await loginAs("reviewer");
  for (const [path, shot] of [
    ["/no-such-page", "not-found-address.png"],
    ["/runs/00000000-0000-4000-8000-000000000000", "not-found-run.png"],
  ] as const) {
    const response = await page.goto(path);
    expect(response?.status(), path).toBe(404);
    await expect(page.getByRole("heading", { name: "Page not found" }), path).toBeVisible();
    await expect(page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Runs", exact: true }), path).toBeVisible();
    await expect(page.getByTestId("current-user"), path).toHaveText("reviewer@airlock.local");
    await expect(page.getByRole("link", { name: "Back to the dashboard" }), path).toBeVisible();
    await page.screenshot({ path: testInfo.outputPath(shot), fullPage: true });
  }
  await page.getByRole("link", { name: "Back to the dashboard" }).click();
  await expect(page).toHaveURL(/\/$/);

  const anonymous = await (await browser.newContext({ baseURL })).newPage();
  const response = await anonymous.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(anonymous.getByRole("heading", { name: "Page not found" })).toBeVisible();
  await expect(anonymous.getByRole("link", { name: "Back to the dashboard" })).toBeVisible();
  await expect(anonymous.getByRole("navigation", { name: "Console" })).toHaveCount(0);
  await anonymous.screenshot({ path: testInfo.outputPath("not-found-signed-out.png") });
  await anonymous.context().close();
});
