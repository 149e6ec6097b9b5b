/**
 * Reviewers approve exactly what will happen. An agent (the MCP SDK's Client) submits refunds;
 * the run is first previewed (reads real, writes intercepted), both reviewers see the plan — each
 * refund with its amount, and the total per currency — in Chromium before the code, approve it,
 * and the run applies exactly that plan. A script whose amount depends on Math.random() plans one
 * amount and would apply another: it is stopped before the call with PLAN_DIVERGED, and the
 * upstream sees no refund.
 */
import { randomBytes } from "node:crypto";
import type { Browser, Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Actor } from "../lib/contracts/scopes";
import { createUser } from "../lib/auth/users";
import { createPrismaClient } from "../lib/db";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[] };
type View = {
  runId: string;
  status: string;
  result?: unknown;
  error?: { code: string; message: string };
  plan?: { seq: number; server: string; tool: string; arguments: Record<string, unknown> }[];
};

const system: Actor = { type: "system", name: "e2e-plan" };
const suffix = randomBytes(3).toString("hex");
const PASSWORD = `e2e-${randomBytes(12).toString("base64url")}`;
const reviewers = [`plan-a-${suffix}@airlock.local`, `plan-b-${suffix}@airlock.local`];

const body = (result: unknown) => JSON.parse((result as TextResult).content[0]!.text) as View;

async function waitFor(agent: Client, runId: string, leave: string[]): Promise<View> {
  for (let i = 0; i < 8; i++) {
    const view = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: i === 0 ? 0 : 15 } }));
    if (!leave.includes(view.status)) return view;
  }
  throw new Error(`run ${runId} stayed in ${leave.join("/")}`);
}

async function reviewerPage(browser: Browser, baseURL: string, email: string): Promise<Page> {
  const page = await (await browser.newContext({ baseURL })).newPage();
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(email, PASSWORD);
  await page.waitForURL((url) => url.pathname === "/");
  return page;
}

async function refundsWithReason(agent: Client, reason: string): Promise<number> {
  const code = `const page = await tools.ledger.listRefunds({ limit: 100 }); return page.refunds.filter((r) => r.reason === ${JSON.stringify(reason)}).length;`;
  const view = body(await agent.callTool({ name: "submit_run", arguments: { code, purpose: "count refunds" } }));
  expect(view.status).toBe("succeeded");
  return view.result as number;
}

test.describe("plan preview and bound apply", () => {
  test.beforeAll(async ({ state }) => {
    const db = createPrismaClient(state.databaseUrl);
    try {
      await db.$transaction(async (tx) => {
        for (const email of reviewers) await createUser(tx, system, { email, role: "reviewer", password: PASSWORD });
      });
    } finally {
      await db.$disconnect();
    }
  });

  test("both reviewers see the refunds with amounts and the total before the code, and the approved plan applies", async ({
    browser,
    baseURL,
    state,
    mcpClient: agent,
  }) => {
    const reason = `plan ${suffix} three`;
    const code = [
      `const page = await tools.ledger.listInvoices({ status: "paid", limit: 50 });`,
      `const currency = page.invoices[0].currency;`,
      `const chosen = page.invoices.filter((i) => i.currency === currency).slice(0, 3);`,
      `const made = [];`,
      `for (const inv of chosen) {`,
      `  const r = await tools.ledger.issueRefund({ invoiceId: inv.id, amountMinor: 1, currency, reason: ${JSON.stringify(reason)}, idempotencyKey: "plan-${suffix}-" + inv.id });`,
      `  made.push(r.refund.id);`,
      `}`,
      `return { currency, invoices: chosen.map((i) => i.id), made };`,
    ].join("\n");
    const submitted = body(await agent.callTool({ name: "submit_run", arguments: { code, purpose: `Refund one cent on three invoices (${suffix})` } }));
    const pending = await waitFor(agent, submitted.runId, ["previewing"]);
    expect(pending.status).toBe("pending_review");
    expect(pending.plan).toHaveLength(3);
    expect(pending.plan!.map((w) => `${w.server}.${w.tool}`)).toEqual(["ledger.issueRefund", "ledger.issueRefund", "ledger.issueRefund"]);
    const currency = pending.plan![0]!.arguments.currency as string;
    const invoices = pending.plan!.map((w) => w.arguments.invoiceId as string);

    for (const email of reviewers) {
      const page = await reviewerPage(browser, baseURL!, email);
      const run = new RunPage(page);
      await run.goto(submitted.runId);
      const plan = page.getByTestId("plan");
      await expect(plan).toBeVisible();
      await expect(page.getByTestId("plan-totals")).toContainText(
        `3 writes moving ${currency === "JPY" ? "3" : "0.03"} ${currency}, for ${invoices.join(", ")}`,
      );
      for (const seq of [1, 2, 3]) await expect(page.getByTestId(`plan-write-${seq}`)).toContainText("ledger.issueRefund");
      // The plan comes before the code.
      const [planBox, codeBox] = await Promise.all([plan.boundingBox(), page.locator(`section[aria-labelledby="code"]`).boundingBox()]);
      expect(planBox!.y).toBeLessThan(codeBox!.y);
      await run.decide("Approve");
      await expect(run.result).toBeVisible();
      await page.context().close();
    }

    const done = await waitFor(agent, submitted.runId, ["pending_review", "approved", "queued", "running"]);
    expect(done).toMatchObject({ status: "succeeded", result: { currency, invoices } });
    expect(await refundsWithReason(agent, reason)).toBe(3);

    const db = createPrismaClient(state.databaseUrl);
    try {
      const calls = await db.runToolCall.findMany({ where: { runId: submitted.runId }, orderBy: { seq: "asc" } });
      // Previewed twice (lib/runs/preview.ts): the writes did not change from one run of the script to the next.
      const previewed = ["ok", "intercepted", "intercepted", "intercepted"];
      expect(calls.filter((c) => c.phase === "preview").map((c) => c.outcome)).toEqual([...previewed, ...previewed]);
      expect(calls.filter((c) => c.phase === "apply").map((c) => `${c.tool}:${c.outcome}`)).toEqual([
        "listInvoices:ok",
        "issueRefund:ok",
        "issueRefund:ok",
        "issueRefund:ok",
      ]);
    } finally {
      await db.$disconnect();
    }
  });

  test("an amount that depends on Math.random() is never offered to reviewers: the preview, run twice, disagrees (PLAN_UNSTABLE), no refund", async ({
    mcpClient: agent,
  }) => {
    const reason = `plan ${suffix} random`;
    const code = [
      `const page = await tools.ledger.listInvoices({ status: "paid", limit: 1 });`,
      `const amountMinor = 1 + Math.floor(Math.random() * 1_000_000);`,
      `return await tools.ledger.issueRefund({ invoiceId: page.invoices[0].id, amountMinor, reason: ${JSON.stringify(reason)}, idempotencyKey: "plan-${suffix}-random" });`,
    ].join("\n");
    const submitted = body(await agent.callTool({ name: "submit_run", arguments: { code, purpose: `A refund of a random amount (${suffix})` } }));
    const done = await waitFor(agent, submitted.runId, ["previewing"]);
    expect(done.status).toBe("failed");
    expect(done.error?.code).toBe("PREVIEW_FAILED");
    expect(done.error?.message).toMatch(
      /PLAN_UNSTABLE: two previews of the same script planned different writes \(write 1 \(ledger\.issueRefund\) has \d+ at \/amountMinor in one and \d+ in the other\)/,
    );
    expect(await refundsWithReason(agent, reason)).toBe(0);
  });
});
