/**
 * Audit coverage of the console in a real browser: each opening of a run's page is one `run.viewed`
 * event — a page load or a client-side navigation — while the page's live refresh (router.refresh
 * every few seconds while the run waits for review) adds none, and signing out leaves
 * `auth.signed_out`. Events are read straight from the e2e database.
 */
import type { Page, Request } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createPrismaClient, type PrismaClient } from "../lib/db";
import { afterPreview, expect, test } from "./fixtures";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[] };

let db: PrismaClient;
test.beforeAll(({ state }) => {
  db = createPrismaClient(state.databaseUrl);
});
test.afterAll(async () => {
  await db?.$disconnect();
});

/** A run that waits for two reviewers (pii + open world), so its page keeps refreshing itself. */
async function submitPendingRun(client: Client, label: string): Promise<string> {
  const result = (await client.callTool({
    name: "submit_run",
    arguments: {
      code: `// audit coverage ${label} ${Date.now()}\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0004", message: "Reminder" });\nreturn { sent: true };`,
      purpose: `Audit coverage: ${label}`,
    },
  })) as TextResult;
  const view = JSON.parse(result.content[0]!.text) as { runId: string; status: string };
  expect(await afterPreview(client, view.runId)).toBe("pending_review");
  return view.runId;
}

const viewsOf = (runId: string) => db.auditEvent.findMany({ where: { action: "run.viewed", subjectType: "run", subjectId: runId }, orderBy: { id: "asc" } });

/** Resolves after the page has made `count` live-refresh requests for the run page. */
/** Resolves when `count` live refreshes of the run page have been answered in full: the server renders after its audit write, so any event a refresh would record is in the database by then. */
function liveRefreshes(page: Page, runId: string, count: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    const onFinished = (request: Request) => {
      const url = new URL(request.url());
      if (url.pathname === `/runs/${runId}` && request.headers()["rsc"] === "1" && ++seen >= count) {
        page.off("requestfinished", onFinished);
        resolve();
      }
    };
    page.on("requestfinished", onFinished);
  });
}

test("opening a run page twice records two run.viewed events, however often the page refreshes itself", async ({ page, mcpClient, loginAs }) => {
  test.setTimeout(90_000);
  const runId = await submitPendingRun(mcpClient, "two views");
  await loginAs("reviewer");
  const reviewer = await db.user.findUniqueOrThrow({ where: { email: "reviewer@airlock.local" } });
  const runPage = new RunPage(page);

  await runPage.goto(runId);
  await expect(runPage.status).toHaveText("pending review");
  await expect.poll(async () => (await viewsOf(runId)).length).toBe(1);

  await runPage.goto(runId);
  await expect(runPage.status).toHaveText("pending review");
  // The page refreshes every 5 s while the run waits for review; let it do so twice.
  await liveRefreshes(page, runId, 2);

  const views = await viewsOf(runId);
  expect(views).toHaveLength(2);
  for (const view of views) expect(view).toMatchObject({ actorType: "user", actorId: reviewer.id, data: { status: "pending_review" } });
});

test("a client-side navigation to a run page is a view; showing a link to it is not", async ({ page, mcpClient, loginAs }) => {
  const runId = await submitPendingRun(mcpClient, "navigation");
  await loginAs("reviewer");
  await page.goto("/queue");
  const link = page.locator(`a[href="/runs/${runId}"]`);
  await expect(link).toBeVisible();
  await link.hover(); // prefetch, if any, is not a view
  await page.waitForTimeout(1_000); // an absence is shown by waiting: a prefetch would have been answered by now
  expect(await viewsOf(runId)).toHaveLength(0);

  await link.click();
  await page.waitForURL(`**/runs/${runId}`);
  await expect(new RunPage(page).status).toHaveText("pending review");
  await expect.poll(async () => (await viewsOf(runId)).length).toBe(1);
  await liveRefreshes(page, runId, 1);
  expect(await viewsOf(runId)).toHaveLength(1);
});

test("signing out records auth.signed_out by the person who signed out", async ({ page, loginAs }) => {
  await loginAs("compliance");
  const person = await db.user.findUniqueOrThrow({ where: { email: "compliance@airlock.local" } });
  const before = await db.auditEvent.count({ where: { action: "auth.signed_out", actorId: person.id } });
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL((url) => url.pathname === "/login");
  const events = await db.auditEvent.findMany({ where: { action: "auth.signed_out", actorId: person.id }, orderBy: { id: "asc" } });
  expect(events).toHaveLength(before + 1);
  expect(events.at(-1)).toMatchObject({ actorType: "user", subjectType: "user", subjectId: person.id, data: { email: "compliance@airlock.local" } });
});
