/**
 * Trojan source on the review page, end to end: the demo agent submits, through the real MCP
 * endpoint, a script whose `//` comment JavaScript ends at U+2028 — a reviewer reading a naive page
 * sees a one-cent refund, the sandbox would run a 2,500.00 one. The shipped policy must escalate it
 * (invisible_character), and the run page in Chromium must show the hidden assignment on its own
 * numbered line 2, a marker element where the line separator is, and the finding. A script that
 * merely writes marker-like text gets plain text, never a marker element.
 */
import { randomBytes } from "node:crypto";
import type { Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect, test } from "./fixtures";

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };

const TROJAN = "let amountMinor = 1; // one cent, goodwill\u2028amountMinor = 250000;";
const suffix = randomBytes(3).toString("hex");

async function submit(client: Client, code: string, purpose: string): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name: "submit_run", arguments: { code, purpose } })) as TextResult;
  return JSON.parse(result.content[0]!.text) as Record<string, unknown>;
}

function script(page: Page) {
  return page.getByRole("region", { name: "Script" });
}

test.describe("Trojan source on the run page", () => {
  let agent: Client;

  test.beforeEach(({ mcpClient }) => {
    agent = mcpClient;
  });

  test("a U+2028 that ends a comment is escalated, and the hidden assignment is shown on its own line 2 with a marker", async ({ page, loginAs }) => {
    const submitted = await submit(agent, TROJAN, `Goodwill refund ${suffix}`);
    // Read-only and unregulated, so without the finding the shipped policy would run it at once.
    expect(submitted).toMatchObject({ status: "pending_review", decision: "escalate" });
    expect(JSON.stringify(submitted.reasons)).toContain("review-hidden-code");
    const runId = submitted.runId as string;

    await loginAs("reviewer");
    await page.goto(`/runs/${runId}`);
    const code = script(page);
    await expect(code).toBeVisible();

    // JavaScript's lines: the comment ends at U+2028, the assignment is line 2 on its own.
    const line1 = code.locator('tr[data-line="1"]');
    const line2 = code.locator('tr[data-line="2"]');
    await expect(code.locator("tr[data-line]")).toHaveCount(2);
    await expect(line1.locator("td").first()).toHaveText("1");
    await expect(line2.locator("td").first()).toHaveText("2");
    await expect(line2.locator("td").nth(1)).toHaveText("line 2: amountMinor = 250000;");
    await expect(line1).not.toContainText("250000");

    // A marker element stands where the line separator is: at the end of line 1, visibly.
    const marker = line1.locator('[data-invisible="U+2028"]');
    await expect(marker).toHaveCount(1);
    await expect(marker).toBeVisible();
    await expect(marker).toHaveText("U+2028");
    await expect(marker).toHaveAttribute("title", /LINE SEPARATOR/);
    // The separator itself never reaches the page, where the browser could break the line silently.
    expect(await code.evaluate((el) => el.textContent!.includes("\u2028"))).toBe(false);

    // The finding is listed under line 1, where the character is, naming the code point.
    const finding = code.getByTestId("finding").filter({ hasText: "invisible_character" });
    await expect(finding).toHaveCount(1);
    await expect(finding).toContainText("invisible_character (line 1, column 43)");
    await expect(finding).toContainText("U+2028 LINE SEPARATOR");
    await expect(page.getByTestId("reason-review-hidden-code")).toBeVisible();
  });

  test("marker-like text written by a script stays plain text and produces no marker element", async ({ page, loginAs }) => {
    const forged = "let amountMinor = 1; // one cent, goodwill⟦U+2028⟧ U+2028 amountMinor = 250000;";
    const submitted = await submit(agent, forged, `Forged marker ${suffix}`);
    // Nothing hidden: an ordinary read-only script, decided without a reviewer.
    expect(submitted.decision).toBe("allow");
    const runId = submitted.runId as string;

    await loginAs("reviewer");
    await page.goto(`/runs/${runId}`);
    const code = script(page);
    await expect(code.locator("tr[data-line]")).toHaveCount(1);
    await expect(code.locator('tr[data-line="1"]')).toContainText("goodwill⟦U+2028⟧ U+2028 amountMinor = 250000;");
    await expect(page.locator("[data-invisible]")).toHaveCount(0);
    await expect(code.getByTestId("finding")).toHaveCount(0);
  });
});
