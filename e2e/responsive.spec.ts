/**
 * The console on a phone (390 px wide): the navigation collapses behind a Menu button, and the
 * queue, a run and the audit search are readable without scrolling the page sideways, even with
 * a long unbroken purpose and a long line of code. Screenshots at 390 px and 1440 px go to the
 * test's output directory (test-results/, not committed).
 */
import { randomBytes } from "node:crypto";
import type { Page, TestInfo } from "@playwright/test";
import { createPrismaClient } from "../lib/db";
import { afterPreview, expect, test } from "./fixtures";
import { QueuePage } from "./pages/queue-page";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[] };

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const suffix = randomBytes(3).toString("hex");

test.use({ viewport: PHONE });

/** The page itself does not scroll sideways: whatever is wide scrolls or wraps inside its own frame. */
async function expectNoSidewaysScroll(page: Page) {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.scrollingElement!.scrollWidth, innerWidth: window.innerWidth }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

async function screenshots(page: Page, testInfo: TestInfo, name: string) {
  await page.screenshot({ path: testInfo.outputPath(`${name}-390.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
  await expectNoSidewaysScroll(page);
  await page.screenshot({ path: testInfo.outputPath(`${name}-1440.png`), fullPage: true });
  await page.setViewportSize(PHONE);
}

test.describe("the console at phone width", () => {
  let runId = "";

  test.beforeAll(async ({ connectMcp }) => {
    const agent = await connectMcp();
    const code = [
      `// responsive ${suffix}`,
      `const message = "Friendly reminder";${" ".repeat(200)}await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: message + " ${"x".repeat(120)}" });`,
      `return { sent: true };`,
    ].join("\n");
    const result = (await agent.callTool({ name: "submit_run", arguments: { code, purpose: `Responsive-${suffix}-${"y".repeat(90)}` } })) as TextResult;
    const view = JSON.parse(result.content[0]!.text) as { runId: string; status: string };
    expect(await afterPreview(agent, view.runId)).toBe("pending_review");
    runId = view.runId;
    await agent.close();
  });

  test("the navigation collapses behind a Menu button that opens it", async ({ page, loginAs }) => {
    await loginAs("reviewer");
    const nav = page.getByRole("navigation", { name: "Console" });
    const menu = page.getByRole("button", { name: "Menu" });
    await expect(nav).toBeHidden();
    await expect(menu).toHaveAttribute("aria-expanded", "false");
    await menu.click();
    await expect(menu).toHaveAttribute("aria-expanded", "true");
    await expect(nav).toBeVisible();
    await nav.getByRole("link", { name: "Runs" }).click();
    await page.waitForURL((url) => url.pathname === "/runs");
    await expect(nav).toBeHidden();
    await expectNoSidewaysScroll(page);

    await page.setViewportSize(DESKTOP);
    await expect(nav).toBeVisible();
    await expect(menu).toBeHidden();
  });

  test("the queue is readable at 390 px", async ({ page, loginAs }, testInfo) => {
    await loginAs("reviewer");
    const queue = new QueuePage(page);
    await queue.goto();
    await expect(queue.row(runId)).toBeVisible();
    await expect(queue.row(runId).getByRole("link")).toBeVisible();
    await expectNoSidewaysScroll(page);
    await screenshots(page, testInfo, "queue");
  });

  test("a run page is readable at 390 px: the code wraps and the arguments are listed", async ({ page, loginAs }, testInfo) => {
    await loginAs("reviewer");
    const run = new RunPage(page);
    await run.goto(runId);
    await expect(run.status).toHaveText("pending review");
    const script = page.getByRole("region", { name: "Script" });
    await expect(script).toContainText("sendReminderEmail");
    expect(await script.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    await expect(page.locator('[data-testid="tool-use"][data-argument="invoiceId"]')).toContainText('"inv_0003"');
    await expect(run.button("Reject")).toBeVisible();
    await expectNoSidewaysScroll(page);
    await screenshots(page, testInfo, "run");
  });

  test("the audit search is readable at 390 px", async ({ page, loginAs, state }, testInfo) => {
    const db = createPrismaClient(state.databaseUrl);
    const row = await db.run.findUniqueOrThrow({ where: { id: runId } }).finally(() => db.$disconnect());
    await loginAs("compliance");
    await page.goto(`/audit?codeHash=${row.codeSha256}`);
    await expect(page.getByRole("heading", { name: "Audit log" })).toBeVisible();
    await expect(page.locator('[data-status="pending_review"]')).toBeVisible();
    await expectNoSidewaysScroll(page);
    await screenshots(page, testInfo, "audit");
  });
});
