/**
 * The review console end to end: an agent (the MCP SDK's real Client) submits scripts that need
 * people; reviewers in Chromium see them arrive without reloading, decide, and the agent sees the
 * outcome. Refusals are checked at the server (HTTP status / typed action result), not by the
 * absence of a button.
 *
 * The page stays readable and current: long lines wrap and every tool call is listed argument by
 * argument, a half-typed comment survives a reload, Reject looks like the danger it is, a status
 * has one colour on every list, and an open page follows a run to its end within seconds.
 *
 * Independent of other specs and of test order: the seeded `reviewer@airlock.local` is used for
 * the first vote, and this spec creates its own extra reviewers (and an agent one of them owns)
 * directly in the e2e database, so e2e/auth.spec.ts locking `reviewer2@airlock.local` cannot
 * affect it.
 */
import { randomBytes } from "node:crypto";
import type { Browser, Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createAgent } from "../lib/auth/agents";
import type { Actor } from "../lib/contracts/scopes";
import { createUser } from "../lib/auth/users";
import { createPrismaClient } from "../lib/db";
import { afterPreview, expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { QueuePage } from "./pages/queue-page";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };
type Person = { email: string; password: string };

const system: Actor = { type: "system", name: "e2e-review" };
const suffix = randomBytes(3).toString("hex");
const PASSWORD = `e2e-${randomBytes(12).toString("base64url")}`;
const extra = {
  second: { email: `second-${suffix}@airlock.local`, password: PASSWORD },
  third: { email: `third-${suffix}@airlock.local`, password: PASSWORD },
  fourth: { email: `fourth-${suffix}@airlock.local`, password: PASSWORD },
  owner: { email: `owner-${suffix}@airlock.local`, password: PASSWORD },
} satisfies Record<string, Person>;
let ownedAgentToken = "";
let nonce = 0;

function body(result: unknown): Record<string, unknown> {
  return JSON.parse((result as TextResult).content[0]!.text) as Record<string, unknown>;
}

/** Submits a script that emails a customer: pii + open world → two reviewer approvals. */
async function submitWrite(client: Client, purpose: string): Promise<string> {
  nonce++;
  const result = body(
    await client.callTool({
      name: "submit_run",
      arguments: {
        code: `// e2e ${suffix} ${nonce}\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: "Friendly reminder" });\nreturn { sent: true, attempt: ${nonce} };`,
        purpose,
        provenance: { model: "e2e-model", conversationId: `conv-${suffix}`, prompt: "Remind the customer about invoice inv_0003." },
      },
    }),
  );
  expect(result).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
  expect(await afterPreview(client, result.runId as string)).toBe("pending_review");
  return result.runId as string;
}

/** Submits `code` as the demo agent; returns the run id and the status submit_run answered with. */
async function submitCode(client: Client, code: string, purpose: string): Promise<{ runId: string; status: string }> {
  const result = body(await client.callTool({ name: "submit_run", arguments: { code, purpose } }));
  return { runId: result.runId as string, status: result.status as string };
}

/** The computed background colour of the first element `locator` finds. */
function background(page: Page, selector: string): Promise<string> {
  return page
    .locator(selector)
    .first()
    .evaluate((element) => getComputedStyle(element).backgroundColor);
}

/** The count the badge shows, read from the server the badge polls. */
async function waitingForMe(page: Page): Promise<number> {
  return ((await (await page.request.get("/api/queue/count")).json()) as { waitingForYou: number }).waitingForYou;
}

async function signIn(page: Page, person: Person) {
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(person.email, person.password);
  await page.waitForURL((url) => url.pathname === "/");
}

async function personPage(browser: Browser, baseURL: string, person: Person): Promise<Page> {
  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  await signIn(page, person);
  return page;
}

function seeded(state: { credentials: { users: { email: string; role: string; password: string }[] } }, email: string): Person {
  const user = state.credentials.users.find((u) => u.email === email);
  if (!user) throw new Error(`no seeded ${email}`);
  return user;
}

test.describe("review console", () => {
  let agent: Client;

  test.beforeAll(async ({ state }) => {
    const db = createPrismaClient(state.databaseUrl);
    try {
      await db.$transaction(async (tx) => {
        for (const person of Object.values(extra)) await createUser(tx, system, { email: person.email, role: "reviewer", password: person.password });
      });
      const created = await db.$transaction((tx) => createAgent(tx, system, { name: `owned-${suffix}`, ownerEmail: extra.owner.email }));
      ownedAgentToken = created.token;
    } finally {
      await db.$disconnect();
    }
  });

  test.beforeEach(({ mcpClient }) => {
    agent = mcpClient;
  });

  test("a write script appears in the queue live, needs two people, and its result reaches the agent", async ({ page, state, browser, baseURL }) => {
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const queue = new QueuePage(page);
    await queue.goto();
    await expect(page.getByRole("heading", { name: "Review queue" })).toBeVisible();

    const purpose = `Remind a customer ${suffix}`;
    const runId = await submitWrite(agent, purpose);
    // No reload: the table polls the queue route.
    await expect(queue.row(runId)).toBeVisible({ timeout: 15_000 });
    await expect(queue.row(runId)).toContainText(purpose);
    await expect(queue.row(runId)).toContainText("0/2");
    await expect(queue.badge).toBeVisible();

    await queue.open(runId);
    const run = new RunPage(page);
    await expect(page.getByRole("heading", { name: purpose })).toBeVisible();
    await expect(page.getByRole("region", { name: "Script" })).toContainText("sendReminderEmail");
    await expect(page.getByTestId("capability-ledger.sendReminderEmail")).toContainText("pii");
    await expect(page.getByTestId("reason-review-open-world")).toBeVisible();
    await expect(page.getByTestId("timeline")).toContainText("run.pending_review");
    await run.decide("Approve");
    await expect(run.result).toContainText("1/2");
    await expect(run.quorum).toContainText("1 of 2");
    await expect(run.cannotDecide).toContainText("already voted");
    expect(body(await agent.callTool({ name: "get_run", arguments: { runId } })).status).toBe("pending_review");

    const second = await personPage(browser, baseURL!, extra.second);
    const secondRun = new RunPage(second);
    await secondRun.goto(runId);
    await expect(secondRun.quorum).toContainText("reviewer@airlock.local");
    await secondRun.decide("Approve");
    await expect(secondRun.result).toContainText("queued");

    const done = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 30 } }));
    expect(done).toMatchObject({ status: "succeeded", result: { sent: true }, approvals: { required: 2 } });
    expect((done.approvals as { approvedBy: string[] }).approvedBy.sort()).toEqual(["reviewer@airlock.local", extra.second.email].sort());

    // The first reviewer's page follows the run to its end without a reload.
    await expect(run.status).toHaveText("succeeded", { timeout: 20_000 });
    await expect(page.getByTestId("isolation")).toHaveText("strict");
    await page.getByTestId("tool-call-1").locator("summary").click();
    await expect(page.getByRole("region", { name: "Arguments of call 1" }).or(page.getByLabel("Arguments of call 1"))).toContainText("inv_0003");
    await second.context().close();
  });

  test("two reviewers clicking approve at once execute the run once", async ({ page, state, browser, baseURL }) => {
    const runId = await submitWrite(agent, `Race ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const first = new RunPage(page);
    await first.goto(runId);
    await first.decide("Approve");
    await expect(first.result).toContainText("1/2");

    const [a, b] = await Promise.all([personPage(browser, baseURL!, extra.third), personPage(browser, baseURL!, extra.fourth)]);
    const runA = new RunPage(a);
    const runB = new RunPage(b);
    await Promise.all([runA.goto(runId), runB.goto(runId)]);
    await Promise.all([expect(runA.button("Approve")).toBeEnabled(), expect(runB.button("Approve")).toBeEnabled()]);
    await Promise.all([runA.button("Approve").click(), runB.button("Approve").click()]);
    await expect(runA.result.or(runA.error)).toBeVisible();
    await expect(runB.result.or(runB.error)).toBeVisible();
    const outcomes = [await runA.result.isVisible(), await runB.result.isVisible()];
    // Exactly one vote completed the quorum; the other was told the run was already decided.
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    const loser = outcomes[0] ? runB : runA;
    await expect(loser.error).toContainText(/already (queued|running|succeeded)/);

    const done = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 30 } }));
    expect(done.status).toBe("succeeded");
    const db = createPrismaClient(state.databaseUrl);
    try {
      const actions = (await db.auditEvent.findMany({ where: { subjectType: "run", subjectId: runId }, select: { action: true } })).map((e) => e.action);
      expect(actions.filter((x) => x === "run.queued")).toHaveLength(1);
      expect(actions.filter((x) => x === "run.running")).toHaveLength(1);
      expect(await db.runToolCall.count({ where: { runId, phase: "apply" } })).toBe(1);
    } finally {
      await db.$disconnect();
    }
    await a.context().close();
    await b.context().close();
  });

  test("a compliance user cannot decide: the server refuses the route and the action", async ({ page, state, browser, baseURL, loginAs }) => {
    const runId = await submitWrite(agent, `Compliance probe ${suffix}`);
    // Capture a real decision action request from a reviewer's page without letting it through.
    const reviewer = await personPage(browser, baseURL!, extra.second);
    const reviewerRun = new RunPage(reviewer);
    await reviewerRun.goto(runId);
    let captured: { headers: Record<string, string>; body: Buffer } | null = null;
    await reviewer.route(`**/runs/${runId}`, async (route) => {
      if (route.request().method() === "POST" && route.request().headers()["next-action"]) {
        captured = { headers: route.request().headers(), body: route.request().postDataBuffer() ?? Buffer.alloc(0) };
        await route.abort();
      } else {
        await route.continue();
      }
    });
    await reviewerRun.button("Approve").click();
    await expect.poll(() => captured !== null).toBe(true);
    await reviewer.context().close();

    await loginAs("compliance");
    const run = new RunPage(page);
    await run.goto(runId);
    await expect(run.status).toHaveText("pending review");
    await expect(run.button("Approve")).toHaveCount(0);

    const db = createPrismaClient(state.databaseUrl);
    try {
      const row = await db.run.findUniqueOrThrow({ where: { id: runId } });
      const seen = { codeSha256: row.codeSha256, capabilitySet: row.capabilitySet, inputsDigest: row.inputsDigest, policyVersionId: row.policyVersionId };
      const refused = await page.request.post(`/api/queue/${runId}/decision`, { data: { verdict: "approve", seen } });
      expect(refused.status()).toBe(403);
      expect(await refused.json()).toMatchObject({ error: { code: "forbidden" } });

      const c = captured as unknown as { headers: Record<string, string>; body: Buffer };
      const replay = await page.request.post(`/runs/${runId}`, {
        headers: { "next-action": c.headers["next-action"]!, "content-type": c.headers["content-type"]!, accept: "text/x-component", origin: baseURL! },
        data: c.body,
      });
      const text = await replay.text();
      expect(text).toContain('"ok":false');
      expect(text).toContain('"code":"forbidden"');
      expect(await db.review.count({ where: { runId } })).toBe(0);
      expect((await db.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("pending_review");
    } finally {
      await db.$disconnect();
    }
  });

  test("nobody decides a run of an agent they own", async ({ page, state, connectMcp }) => {
    const owned = await connectMcp(ownedAgentToken);
    const runId = await submitWrite(owned, `Owned ${suffix}`);
    await owned.close();
    await signIn(page, extra.owner);
    const run = new RunPage(page);
    await run.goto(runId);
    await expect(run.cannotDecide).toContainText("You own the agent");
    await expect(run.button("Approve")).toHaveCount(0);
    const db = createPrismaClient(state.databaseUrl);
    try {
      const row = await db.run.findUniqueOrThrow({ where: { id: runId } });
      const seen = { codeSha256: row.codeSha256, capabilitySet: row.capabilitySet, inputsDigest: row.inputsDigest, policyVersionId: row.policyVersionId };
      const refused = await page.request.post(`/api/queue/${runId}/decision`, { data: { verdict: "approve", seen } });
      expect(refused.status()).toBe(403);
      expect(await refused.json()).toMatchObject({ error: { code: "forbidden", details: { reason: "own_agent" } } });
    } finally {
      await db.$disconnect();
    }
  });

  test("a rejection needs a comment, and the comment reaches the agent", async ({ page, state }) => {
    const runId = await submitWrite(agent, `Reject me ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const run = new RunPage(page);
    await run.goto(runId);
    // A decision bound to other facts than the run's is refused, naming what changed.
    const db = createPrismaClient(state.databaseUrl);
    try {
      const row = await db.run.findUniqueOrThrow({ where: { id: runId } });
      const seen = {
        codeSha256: "0".repeat(64),
        capabilitySet: row.capabilitySet,
        inputsDigest: row.inputsDigest,
        policyVersionId: row.policyVersionId,
        planDigest: (row.plan as { digest: string }).digest,
      };
      const stale = await page.request.post(`/api/queue/${runId}/decision`, { data: { verdict: "approve", seen } });
      expect(stale.status()).toBe(409);
      expect(await stale.json()).toMatchObject({ error: { code: "conflict", details: { changed: ["codeSha256"] } } });
    } finally {
      await db.$disconnect();
    }
    await run.decide("Reject");
    await expect(run.error).toContainText("comment is required");
    const comment = `Do not email customers from scripts (${suffix}); open a ticket instead.`;
    await run.decide("Reject", comment);
    await expect(run.result).toContainText("rejected");
    await expect(run.status).toHaveText("rejected");

    const view = body(await agent.callTool({ name: "get_run", arguments: { runId } }));
    expect(view).toMatchObject({ status: "rejected", error: { code: "REVIEW_REJECTED" } });
    expect(view.comments).toEqual([expect.objectContaining({ verdict: "reject", comment })]);
  });

  test("a reviewer cancels a pending run from its page, and the agent sees it", async ({ page, state }) => {
    const runId = await submitWrite(agent, `Cancel me ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const run = new RunPage(page);
    await run.goto(runId);
    await run.button("Cancel run").click();
    await expect(page.getByText("Cancelled.")).toBeVisible();
    await expect(run.status).toHaveText("cancelled");
    expect(body(await agent.callTool({ name: "get_run", arguments: { runId } })).status).toBe("cancelled");
    await expect(page.getByTestId("timeline")).toContainText("run.cancelled");
  });

  test("a queue filter lives in the URL", async ({ page, state }) => {
    await submitWrite(agent, `Filtered ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const queue = new QueuePage(page);
    await queue.goto(`?agent=nobody-${suffix}`);
    await expect(page.getByText("No pending run matches these filters")).toBeVisible();
    await page.getByLabel("Agent").selectOption("");
    await expect(page).not.toHaveURL(/agent=nobody/);
    await expect(page.getByText(`Filtered ${suffix}`)).toBeVisible();
    await page.getByLabel("Effect").selectOption("write");
    await expect(page).toHaveURL(/effect=write/);
    await expect(page.getByText(`Filtered ${suffix}`)).toBeVisible();
    await page.getByLabel("Effect").selectOption("read_only");
    await expect(page).toHaveURL(/effect=read_only/);
    await expect(page.getByText(`Filtered ${suffix}`)).toHaveCount(0);
  });

  test("long lines wrap in the code, and every tool call is listed with its arguments", async ({ page, state }) => {
    nonce++;
    const code = [
      `// e2e ${suffix} ${nonce}`,
      `const note = "Friendly reminder";${" ".repeat(300)}await tools.ledger.sendReminderEmail({ invoiceId: "inv_0003", message: note + " (${nonce})" });`,
      `return { sent: true };`,
    ].join("\n");
    const { runId } = await submitCode(agent, code, `Wide line ${suffix}`);
    expect(await afterPreview(agent, runId)).toBe("pending_review");
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    await new RunPage(page).goto(runId);

    const script = page.getByRole("region", { name: "Script" });
    await expect(script.locator('tr[data-line="2"]')).toContainText("sendReminderEmail");
    // Nothing of the long line is off to the right: the block needs no horizontal scrolling, and the call is inside it.
    expect(await script.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    const call = await script.locator('tr[data-line="2"] td').nth(1).boundingBox();
    const frame = await script.boundingBox();
    expect(call!.x + call!.width).toBeLessThanOrEqual(frame!.x + frame!.width + 1);

    const rows = page.locator('[data-testid="tool-use"][data-tool="ledger.sendReminderEmail"]');
    await expect(rows).toHaveCount(2);
    await expect(rows.and(page.locator('[data-argument="invoiceId"]'))).toContainText('"inv_0003"');
    await expect(rows.and(page.locator('[data-argument="invoiceId"]'))).toHaveAttribute("data-known", "true");
    await expect(rows.and(page.locator('[data-argument="message"]'))).toContainText("computed at run time");
    await expect(rows.and(page.locator('[data-argument="message"]'))).toContainText(`note + " (${nonce})"`);
    await expect(page.locator('[data-testid="tool-use-call"][data-tool="ledger.sendReminderEmail"]')).toContainText("line 2, column");
  });

  test("Reject is a danger action, set apart from Approve and Request changes", async ({ page, state }) => {
    const runId = await submitWrite(agent, `Buttons ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const run = new RunPage(page);
    await run.goto(runId);
    await expect(run.button("Reject")).toHaveAttribute("data-variant", "danger");
    await expect(run.button("Approve")).not.toHaveAttribute("data-variant", "danger");
    await expect(run.button("Request changes")).not.toHaveAttribute("data-variant", "danger");
    // Each button's background as sRGB, whatever colour syntax the stylesheet used (oklch, lab, …).
    const colours = await Promise.all(
      (["Approve", "Request changes", "Reject"] as const).map((name) =>
        run.button(name).evaluate((button) => {
          const context = document.createElement("canvas").getContext("2d")!;
          context.fillStyle = getComputedStyle(button).backgroundColor;
          context.fillRect(0, 0, 1, 1);
          return Array.from(context.getImageData(0, 0, 1, 1).data.slice(0, 3));
        }),
      ),
    );
    expect(new Set(colours.map((c) => c.join(","))).size).toBe(3);
    const [red, green, blue] = colours[2]!;
    expect(red! > green! + 60 && red! > blue! + 60, `Reject is ${colours[2]!.join(",")}`).toBe(true);
  });

  test("a half-typed comment survives a reload and is gone once the decision is accepted", async ({ page, state }) => {
    const runId = await submitWrite(agent, `Draft ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const run = new RunPage(page);
    await run.goto(runId);
    const draft = `Please do not email customers directly (${suffix})`;
    await run.comment.pressSequentially(draft);
    await page.reload();
    await expect(run.comment).toHaveValue(draft);

    await run.button("Request changes").click();
    await expect(run.result).toContainText("requested changes");
    const kept = await page.evaluate(() => Object.keys(sessionStorage).filter((key) => key.startsWith("airlock.review-comment.")));
    expect(kept.filter((key) => key.includes(runId))).toEqual([]);
    const view = body(await agent.callTool({ name: "get_run", arguments: { runId } }));
    expect(view.comments).toEqual([expect.objectContaining({ verdict: "request_changes", comment: draft })]);
  });

  test("an open run page follows the run to its end within two seconds, and the queue badge follows the vote", async ({ page, state, browser, baseURL }) => {
    const runId = await submitWrite(agent, `Fresh ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));
    const run = new RunPage(page);
    await run.goto(runId);
    await expect(run.status).toHaveText("pending review");
    const badge = new QueuePage(page).badge;
    const before = await waitingForMe(page);
    expect(before).toBeGreaterThan(0);
    const shows = (count: number) => new RegExp(`^${count} `);
    await expect(badge).toHaveText(shows(before));

    await run.decide("Approve");
    await expect(run.result).toContainText("1/2");
    // The badge follows the vote at once, not a poll later.
    if (before > 1) await expect(badge).toHaveText(shows(before - 1), { timeout: 1_500 });
    else await expect(badge).toHaveCount(0, { timeout: 1_500 });

    const second = await personPage(browser, baseURL!, extra.second);
    const secondRun = new RunPage(second);
    await secondRun.goto(runId);
    await secondRun.decide("Approve");
    await expect(secondRun.result).toContainText("queued");
    const done = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 30 } }));
    expect(done.status).toBe("succeeded");
    // No reload on the first reviewer's page: it shows the end within two seconds of it.
    await expect(run.status).toHaveText("succeeded", { timeout: 2_000 });
    await expect(page.getByTestId("tool-call-1")).toBeVisible({ timeout: 1_000 });
    await second.context().close();
  });

  test("a status has one colour on the run page, the runs list, the queue and the audit search", async ({ page, state, browser, baseURL }) => {
    nonce++;
    const finished = await submitCode(
      agent,
      `// e2e ${suffix} ${nonce}\nconst p = await tools.ledger.listInvoices({ limit: 2 });\nreturn p.invoices.length;`,
      `Tone ${suffix}`,
    );
    expect(finished.status).toBe("succeeded");
    const pending = await submitWrite(agent, `Tone pending ${suffix}`);
    await signIn(page, seeded(state, "reviewer@airlock.local"));

    const run = new RunPage(page);
    await run.goto(finished.runId);
    const succeeded = await background(page, '[data-testid="run-status"]');
    await run.goto(pending);
    const waiting = await background(page, '[data-testid="run-status"]');
    expect(succeeded).not.toBe(waiting);

    await page.goto("/runs");
    expect(await background(page, `[data-testid="run-row-${finished.runId}"] [data-status="succeeded"]`)).toBe(succeeded);
    expect(await background(page, `[data-testid="run-row-${pending}"] [data-status="pending_review"]`)).toBe(waiting);
    await new QueuePage(page).goto();
    expect(await background(page, `[data-testid="queue-row-${pending}"] [data-status="pending_review"]`)).toBe(waiting);

    const db = createPrismaClient(state.databaseUrl);
    const row = await db.run.findUniqueOrThrow({ where: { id: finished.runId } }).finally(() => db.$disconnect());
    const compliance = await personPage(
      browser,
      baseURL!,
      state.credentials.users.find((u) => u.role === "compliance")!,
    );
    await compliance.goto(`/audit?codeHash=${row.codeSha256}`);
    expect(await background(compliance, '[data-status="succeeded"]')).toBe(succeeded);
    await compliance.context().close();
  });
});
