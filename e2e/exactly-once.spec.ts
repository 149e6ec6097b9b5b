/**
 * Exactly once, whatever a script returns: the attack that once refunded money 16 times, through
 * the real path. An agent (the MCP SDK's Client) submits refund scripts whose result, logs or error
 * carry a character PostgreSQL refuses (a lone UTF-16 surrogate); two reviewers approve them in
 * Chromium; the run must execute once, end in a terminal state with its audit event, call the
 * upstream at most once, and leave an audit chain that verifies. A write whose arguments carry
 * U+0000 is never planned: reviewers would see U+FFFD, not what the upstream gets.
 * Agent-supplied text carrying the same characters is refused (BAD_REQUEST) naming the field.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Browser, Page } from "@playwright/test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Actor } from "../lib/contracts/scopes";
import { createUser } from "../lib/auth/users";
import { createPrismaClient } from "../lib/db";
import { afterPreview, expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };
type Person = { email: string; password: string };
type View = { runId: string; status: string; result?: unknown; logs?: { text: string }[]; flags?: string[]; error?: { code: string; message: string } };

const system: Actor = { type: "system", name: "e2e-exactly-once" };
const suffix = randomBytes(3).toString("hex");
const PASSWORD = `e2e-${randomBytes(12).toString("base64url")}`;
const reviewers: Person[] = [
  { email: `once-a-${suffix}@airlock.local`, password: PASSWORD },
  { email: `once-b-${suffix}@airlock.local`, password: PASSWORD },
];

/** A paid invoice with room for a one-cent refund, found by a read-only script of its own. */
const FIND_INVOICE = `const page = await tools.ledger.listInvoices({ status: "paid", limit: 50 }); return page.invoices.map((i) => i.id);`;

function refundScript(invoiceId: string, tag: string, reasonExpr: string, tail: string): string {
  // The script picks its own idempotency key, so a re-execution would be a second refund (a key
  // from Math.random() would diverge from the approved plan instead: e2e/plan.spec.ts).
  return [
    `const key = "once-${suffix}-${tag}";`,
    `const refund = await tools.ledger.issueRefund({ invoiceId: ${JSON.stringify(invoiceId)}, amountMinor: 1, reason: ${reasonExpr}, idempotencyKey: key });`,
    tail,
  ].join("\n");
}

function body(result: unknown): View {
  return JSON.parse((result as TextResult).content[0]!.text) as View;
}

async function reviewerPage(browser: Browser, baseURL: string, person: Person): Promise<Page> {
  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  const login = new LoginPage(page);
  await login.goto();
  await login.signIn(person.email, person.password);
  await page.waitForURL((url) => url.pathname === "/");
  return page;
}

async function finished(agent: Client, runId: string): Promise<View> {
  for (let i = 0; i < 6; i++) {
    const view = body(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 20 } }));
    if (!["pending_review", "approved", "auto_approved", "queued", "running"].includes(view.status)) return view;
  }
  throw new Error(`run ${runId} did not finish`);
}

test.describe("exactly once, whatever a script returns", () => {
  let invoices: string[] = [];

  test.beforeAll(async ({ state, connectMcp }) => {
    const db = createPrismaClient(state.databaseUrl);
    try {
      await db.$transaction(async (tx) => {
        for (const person of reviewers) await createUser(tx, system, { email: person.email, role: "reviewer", password: person.password });
      });
    } finally {
      await db.$disconnect();
    }
    // Closed after this hook; each test gets its own client (mcpClient).
    const agent = await connectMcp();
    const found = body(await agent.callTool({ name: "submit_run", arguments: { code: FIND_INVOICE, purpose: "find paid invoices" } }));
    expect(found.status).toBe("succeeded");
    invoices = found.result as string[];
    expect(invoices.length).toBeGreaterThan(3);
  });

  const cases = [
    {
      name: "a lone surrogate in the result and the logs",
      reason: `"goodwill ${suffix} a"`,
      tail: `const text = "Refund issued 👍".slice(0, 15); console.log(text); return { text, refund: refund.refund.id };`,
      check: (view: View) => {
        expect(view.status).toBe("succeeded");
        expect((view.result as { text: string }).text).toBe("Refund issued \ufffd");
        expect(view.logs?.[0]?.text).toBe("Refund issued \ufffd");
      },
    },
    {
      name: "a lone surrogate in a thrown error",
      reason: `"goodwill ${suffix} c"`,
      // Thrown by the run itself, not by its plan preview (whose refund id is a placeholder).
      tail: `if (refund.refund.id.startsWith("@plan:")) return "planned"; throw new Error("Refund issued 👍".slice(0, 15));`,
      check: (view: View) => {
        expect(view.status).toBe("failed");
        expect(view.error?.code).toBe("SCRIPT_ERROR");
        expect(view.error?.message).toContain("Refund issued \ufffd");
      },
    },
  ];

  for (const [index, attack] of cases.entries()) {
    test(`${attack.name}: one execution, one upstream call, a terminal state, a chain that verifies`, async ({ state, browser, baseURL, mcpClient: agent }) => {
      const invoiceId = invoices[index]!;
      const submitted = body(
        await agent.callTool({
          name: "submit_run",
          arguments: { code: refundScript(invoiceId, String(index), attack.reason, attack.tail), purpose: `Refund one cent (${attack.name})` },
        }),
      );
      expect(submitted).toMatchObject({ approvalsRequired: 2 });
      const { runId } = submitted;
      expect(await afterPreview(agent, runId)).toBe("pending_review");

      for (const person of reviewers) {
        const page = await reviewerPage(browser, baseURL!, person);
        const run = new RunPage(page);
        await run.goto(runId);
        // The reviewer sees the limits the sandbox will enforce: one call site, one refund.
        await expect(page.getByTestId("cap-ledger.issueRefund")).toContainText("at most 1 time");
        await expect(page.getByTestId("limits")).toContainText("1000");
        await run.decide("Approve");
        await expect(run.result).toBeVisible();
        await page.context().close();
      }

      const view = await finished(agent, runId);
      attack.check(view);
      expect(view.flags).toContain("content_normalized");

      const db = createPrismaClient(state.databaseUrl);
      try {
        const events = await db.auditEvent.findMany({ where: { subjectId: runId }, orderBy: { id: "asc" }, select: { action: true } });
        const actions = events.map((e) => e.action);
        expect(actions.filter((a) => a === "run.running")).toHaveLength(1);
        // One terminal event, after the one execution (reads of the run are audited too, so not last).
        expect(actions.filter((a) => a === `run.${view.status}`)).toHaveLength(1);
        expect(actions.indexOf(`run.${view.status}`)).toBeGreaterThan(actions.indexOf("run.running"));
        expect(actions).not.toContain("run.requeued");
        const calls = await db.runToolCall.findMany({ where: { runId, phase: "apply" } });
        expect(calls).toHaveLength(1);
        expect(calls[0]).toMatchObject({ tool: "issueRefund", readOnly: false, outcome: "ok" });
        const run = await db.run.findUniqueOrThrow({ where: { id: runId } });
        expect(run).toMatchObject({ status: view.status, attempt: 1 });
      } finally {
        await db.$disconnect();
      }

      // The upstream itself saw one refund with this reason, asked through a read-only run.
      const refunds = body(
        await agent.callTool({
          name: "submit_run",
          arguments: {
            code: `const page = await tools.ledger.listRefunds({ invoiceId: ${JSON.stringify(invoiceId)}, limit: 100 }); return page.refunds.filter((r) => r.reason.startsWith("goodwill ${suffix}")).length;`,
            purpose: "count refunds",
          },
        }),
      );
      expect(refunds).toMatchObject({ status: "succeeded", result: 1 });

      const verify = spawnSync(process.execPath, [join(import.meta.dirname, "..", "bin", "airlock.mjs"), "audit", "verify", "--json"], {
        // The server's own checkpoints and signing key: verify checks the chain against them.
        env: { ...process.env, DATABASE_URL: state.databaseUrl, AIRLOCK_DATA_DIR: state.dataDir },
        encoding: "utf8",
        timeout: 60_000,
      });
      expect(verify.status, verify.stdout + verify.stderr).toBe(0);
    });
  }

  test("U+0000 in a write's argument is never planned: reviewers would see U+FFFD, so the preview fails and nothing is called", async ({
    state,
    mcpClient: agent,
  }) => {
    const invoiceId = invoices[cases.length]!;
    const submitted = body(
      await agent.callTool({
        name: "submit_run",
        arguments: { code: refundScript(invoiceId, "nul", `"goodwill ${suffix} nul\\u0000"`, "return 1;"), purpose: "Refund one cent (U+0000 in its reason)" },
      }),
    );
    expect(await afterPreview(agent, submitted.runId)).toBe("failed");
    const view = body(await agent.callTool({ name: "get_run", arguments: { runId: submitted.runId } }));
    expect(view.error?.code).toBe("PREVIEW_FAILED");
    expect(view.error?.message).toContain("PLAN_UNREVIEWABLE: write 1 (ledger.issueRefund)");
    const db = createPrismaClient(state.databaseUrl);
    try {
      const calls = await db.runToolCall.findMany({ where: { runId: submitted.runId }, select: { phase: true, outcome: true } });
      expect(calls).toEqual([{ phase: "preview", outcome: "refused" }]);
    } finally {
      await db.$disconnect();
    }
  });

  test("agent text carrying U+0000 or a lone surrogate is refused (BAD_REQUEST, a result the model reads) naming the field, and the refusal is audited", async ({
    state,
    mcpClient: agent,
  }) => {
    const attempts = [
      { field: "code", args: { code: "return 1; // \u0000", purpose: "nul in code" } },
      { field: "purpose", args: { code: "return 1;", purpose: "Refund issued 👍".slice(0, 15) } },
      { field: "provenance.prompt", args: { code: "return 1;", purpose: "ok", provenance: { prompt: "a\ud800b" } } },
      { field: "idempotencyKey", args: { code: "return 1;", purpose: "ok", idempotencyKey: "key\u0000" } },
    ];
    for (const attempt of attempts) {
      const answer = (await agent.callTool({ name: "submit_run", arguments: attempt.args })) as { content: { text: string }[]; isError?: boolean };
      expect(answer.isError, attempt.field).toBe(true);
      const { error } = JSON.parse(answer.content[0]!.text) as { error: { code: string; message: string } };
      expect(error.code).toBe("BAD_REQUEST");
      expect(error.message).toContain(attempt.field);
    }
    const db = createPrismaClient(state.databaseUrl);
    try {
      const { id } = await db.agent.findUniqueOrThrow({ where: { name: state.credentials.agent.name }, select: { id: true } });
      const refused = await db.auditEvent.count({ where: { action: "run.refused", subjectId: id } });
      expect(refused).toBeGreaterThanOrEqual(attempts.length);
    } finally {
      await db.$disconnect();
    }
  });
});
