/**
 * Results the agent can trust, through the MCP endpoint (the SDK's real Client) and the console
 * (Chromium): a script whose checks.sum fails gets check_failed, isError and no result, with the
 * numbers and what to do next; a swallowed tool failure is isError with its result; a reviewer
 * releases the withheld result with a reason, and the agent then gets it.
 */
import { randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect, test } from "./fixtures";
import { RunPage } from "./pages/run-page";

type Answer = { isError?: boolean; content: { text: string }[] };
type View = {
  runId: string;
  status: string;
  result?: unknown;
  error?: { code: string; message: string; next: string };
  checks?: { kind: string; label: string; ok: boolean; message: string }[];
  rows?: { read: Record<string, number> };
  released?: { by: string[] };
  consoleUrl: string;
};

const suffix = randomBytes(3).toString("hex");

async function submit(agent: Client, code: string, purpose: string): Promise<{ answer: Answer; view: View }> {
  const answer = (await agent.callTool({ name: "submit_run", arguments: { code, purpose, language: "javascript" } })) as Answer;
  return { answer, view: JSON.parse(answer.content[0]!.text) as View };
}

/** Totals refunds twice: the answer is off, and the check the script declared says so. */
const OFF_BY_SEVEN = `// ${suffix}
const { invoices } = await tools.ledger.listInvoices({ status: "paid", limit: 50 });
const total = invoices.reduce((s, i) => s + i.amountMinor, 0);
const claimed = Math.round(total * 1.07);
await checks.sum("paid total", invoices, "amountMinor", claimed);
return { paidTotal: claimed };`;

test("a failing checks.sum ends check_failed: isError, no result, the numbers and what to do next", async ({ mcpClient: agent }) => {
  const { answer, view } = await submit(agent, OFF_BY_SEVEN, `Paid total ${suffix}`);
  expect(answer.isError).toBe(true);
  expect(view.status).toBe("check_failed");
  expect(view.error).toMatchObject({
    code: "CHECK_FAILED",
    message: expect.stringMatching(/^check "paid total" \(sum\) failed: the sum of amountMinor over 50 rows is \d+, expected \d+ \(off by \d+\)$/),
  });
  expect(view.error?.next).toMatch(/^Do not use the result/);
  expect(view).not.toHaveProperty("result");
  expect(view.checks).toEqual([expect.objectContaining({ kind: "sum", label: "paid total", ok: false })]);
  expect(view.rows?.read).toEqual({ "ledger.listInvoices": 50 });
  expect(view.consoleUrl).toMatch(new RegExp(`/runs/${view.runId}$`));
});

test("a swallowed tool failure is isError with SWALLOWED_FAILURE, and its result is included; the console shows it as no plain success", async ({
  page,
  loginAs,
  mcpClient: agent,
}) => {
  const { answer, view } = await submit(
    agent,
    `// ${suffix}
const limit = Number("100000");
let refunds = [];
try { refunds = (await tools.ledger.listRefunds({ limit })).refunds; } catch { /* the script carries on */ }
return { refunds: refunds.length };`,
    `Refund count ${suffix}`,
  );
  expect(answer.isError).toBe(true);
  expect(view).toMatchObject({
    status: "succeeded",
    result: { refunds: 0 },
    error: { code: "SWALLOWED_FAILURE", next: expect.stringContaining("checks.allowPartial") },
  });
  // Not the green of a clean success, on the run page or in the runs list.
  await loginAs("reviewer");
  await page.goto(`/runs/${view.runId}`);
  await expect(page.getByTestId("run-status")).toHaveText("succeeded, swallowed failure");
  await page.goto("/runs?status=succeeded");
  await expect(
    page
      .getByRole("row")
      .filter({ hasText: `Refund count ${suffix}` })
      .locator('[data-status="succeeded"]'),
  ).toHaveText("succeeded, swallowed failure");
});

test("a reviewer releases a withheld result in the console with a reason; then the agent gets it", async ({ page, loginAs, mcpClient: agent }) => {
  const { view } = await submit(agent, OFF_BY_SEVEN.replace(suffix, `${suffix}-release`), `Paid total to release ${suffix}`);
  expect(view.status).toBe("check_failed");

  await loginAs("reviewer");
  const run = new RunPage(page);
  await run.goto(view.runId);
  await expect(page.getByTestId("run-status")).toContainText("check failed");
  const check = page.getByTestId("gate-report").getByTestId("check");
  await expect(check).toContainText("paid total");
  await expect(check).toContainText("failed");
  const panel = page.getByTestId("release-panel");
  await expect(panel).toContainText("the result is withheld from the agent");
  await page.getByLabel(/Why can the agent use this result/).fill("The 7% is VAT, added on purpose for this report.");
  await page.getByRole("button", { name: "Release the result" }).click();
  await expect(page.getByTestId("release-result")).toContainText("Released: the agent gets the result now.");

  const after = JSON.parse(((await agent.callTool({ name: "get_run", arguments: { runId: view.runId } })) as Answer).content[0]!.text) as View;
  expect(after).toMatchObject({ status: "check_failed", result: { paidTotal: expect.any(Number) }, released: { by: [expect.stringMatching(/@/)] } });
  expect(after).not.toHaveProperty("error");
});

test("a secret in a tool result is redacted before the script, the audit log or the agent sees it", async ({ mcpClient: agent }) => {
  const { answer, view } = await submit(
    agent,
    `// ${suffix}
const { refunds } = await tools.ledger.listRefunds({ limit: 50 });
const leaked = refunds.find((r) => r.id === "ref_007");
return { reason: leaked.reason, scriptSawTheKey: /sk_(test|live)_/.test(leaked.reason) };`,
    `Refund reason ${suffix}`,
  );
  expect(answer.isError).toBeFalsy();
  expect(answer.content[0]!.text).not.toContain("sk_test_");
  expect(view).toMatchObject({ status: "succeeded", result: { reason: expect.stringContaining("[REDACTED:stripe_key]"), scriptSawTheKey: false } });
  expect((view as View & { flags: string[] }).flags).toContain("secret_redacted");
});
