/**
 * Release review, through the MCP endpoint (the SDK's real Client) and the console (Chromium): a
 * script that reads customers (pii) and returns more than 64 KiB of them is approved by two
 * reviewers, runs, and is held by the shipped hold-large-regulated-results; the agent waits without
 * a result; the held run waits in the queue; a reviewer releases it on the run page with a reason,
 * and the agent then gets the result.
 */
import { randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { approveInBrowser, createReviewers, type Reviewers } from "./reviewers";

type View = { runId: string; status: string; result?: unknown; next?: string; released?: { by: string[] }; error?: { code: string } };

const suffix = randomBytes(4).toString("hex");
let reviewers: Reviewers;

function view(result: unknown): View {
  return JSON.parse((result as { content: { text: string }[] }).content[0]!.text) as View;
}

/** Waits, as an agent does with get_run, until the run is past review and execution. */
async function ranAndWaiting(agent: Client, runId: string): Promise<View> {
  for (let i = 0; i < 30; i++) {
    const current = view(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 1 } }));
    if (!["pending_review", "approved", "queued", "running"].includes(current.status)) return current;
  }
  throw new Error(`run ${runId} did not run`);
}

test.beforeAll(async ({ state }) => {
  reviewers = await createReviewers(state.databaseUrl, "release");
});

test("a held result is released in Chromium, and then it reaches the agent", async ({ browser, baseURL, mcpClient: agent }) => {
  const code = `// ${suffix}
const { customers } = await tools.ledger.listCustomers({ limit: 50 });
// Twenty copies: more than 64 KiB of personal data, more than an agent needs.
return Array.from({ length: 20 }, (_, copy) => ({ copy, customers }));`;
  const submitted = view(
    await agent.callTool({
      name: "submit_run",
      arguments: {
        code,
        purpose: `Customer export ${suffix}`,
        language: "javascript",
        provenance: { model: "e2e-model", prompt: "export the customers", conversationId: `release-${suffix}` },
      },
    }),
  );
  expect(submitted.status).toBe("pending_review");
  await approveInBrowser(browser, baseURL!, reviewers, submitted.runId);

  const held = await ranAndWaiting(agent, submitted.runId);
  expect(held.status).toBe("pending_release");
  expect(held).not.toHaveProperty("result");
  expect(held.next).toMatch(/more than 64 KiB/);

  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(reviewers.emails[0]!, reviewers.password);
  await page.waitForURL((url) => url.pathname === "/");

  await page.goto("/queue");
  const row = page.getByTestId(`queue-row-${submitted.runId}`);
  await expect(row).toContainText("pending release");
  await expect(row).toContainText("0/1 releases");
  await row.getByRole("link").click();
  await page.waitForURL(`**/runs/${submitted.runId}`);

  const panel = page.getByTestId("release-panel");
  await expect(page.getByRole("heading", { name: "Result held for release" })).toBeVisible();
  await expect(panel).toContainText("policy holds its result before the agent sees it");
  await expect(panel.getByRole("list", { name: "Why policy holds the result" })).toContainText("more than 64 KiB");
  await expect(panel.getByRole("button", { name: "Withhold the result" })).toHaveAttribute("data-variant", "danger");
  await page.getByLabel(/Why may the agent use this result/).fill("The export is for the quarterly customer audit, approved by the DPO.");
  await panel.getByRole("button", { name: "Release the result" }).click();
  await expect(page.getByTestId("release-result")).toContainText("Released: the agent gets the result now.");
  await context.close();

  const after = view(await agent.callTool({ name: "get_run", arguments: { runId: submitted.runId } }));
  expect(after).toMatchObject({ status: "succeeded", released: { by: [reviewers.emails[0]] } });
  // Over 16 KiB, so the model gets a preview of it (tokenized: no address), and the full result is on record.
  expect(after.result).toMatchObject({ preview: expect.stringContaining('"copy":0'), note: expect.stringContaining("Return less") });
  expect(JSON.stringify(after.result)).not.toMatch(/@example\.com/);
});
