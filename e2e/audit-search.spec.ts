/**
 * The compliance search and a run's timeline in a real browser: an identifier found by a part of
 * it, an agent found by part of its name (with suggestions), and the timeline naming the agent and
 * person, describing each event in words, with its raw JSON one click away and an invisible
 * character in stored text shown as a marker. The run is written straight to the e2e database,
 * its events through recordAudit (so the chain stays valid).
 */
import { randomBytes, createHash } from "node:crypto";
import { recordAudit } from "../lib/audit/record";
import { createPrismaClient, type PrismaClient } from "../lib/db";
import { expect, test } from "./fixtures";

let db: PrismaClient;
test.beforeAll(({ state }) => {
  db = createPrismaClient(state.databaseUrl);
});
test.afterAll(async () => {
  await db?.$disconnect();
});

test("a run found by part of an identifier opens on a timeline people can read", async ({ page, state, loginAs }) => {
  const marker = `zz${randomBytes(4).toString("hex")}`;
  const agent = await db.agent.findUniqueOrThrow({ where: { name: state.credentials.agent.name } });
  const reviewer = await db.user.findFirstOrThrow({ where: { role: "reviewer" } });
  const code = `// ${marker}\nreturn await tools.ledger.issueRefund({ invoiceId: "inv_0004" });`;
  const run = await db.run.create({
    data: {
      agentId: agent.id,
      language: "javascript",
      code,
      codeSha256: createHash("sha256").update(code).digest("hex"),
      purpose: `Refund ${marker}\u200b twice`,
      inputsDigest: "0".repeat(64),
      requestDigest: createHash("sha256").update(marker).digest("hex"),
      status: "pending_review",
      decision: "escalate",
    },
  });
  // The trail intake and a review would have written, so the log still verifies for the tests after this one.
  const subject = { type: "run", id: run.id };
  await db.$transaction(async (tx) => {
    await recordAudit(tx, {
      actor: { type: "agent", id: agent.id, name: agent.name, ownerId: agent.ownerId, scopes: [] },
      action: "run.submitted",
      subject,
      data: { codeSha256: run.codeSha256 },
    });
    await recordAudit(tx, { actor: { type: "system", name: "policy" }, action: "run.pending_review", subject });
    await tx.review.create({ data: { runId: run.id, reviewerId: reviewer.id, verdict: "approve" } });
    await recordAudit(tx, {
      actor: { type: "user", id: reviewer.id, email: reviewer.email, role: "reviewer" },
      action: "run.reviewed",
      subject,
      data: { verdict: "approve", comment: null },
    });
  });

  await loginAs("compliance");
  // "issueRefund" alone, and part of the agent's name in any case.
  const agentPart = agent.name.slice(1, -1).toUpperCase();
  await page.goto(`/audit?q=${encodeURIComponent(`issueRefund ${marker}`)}&agent=${encodeURIComponent(agentPart)}`);
  await expect(page.locator("#f-agent")).toHaveAttribute("list", "f-agent-suggestions");
  await expect(page.locator(`#f-agent-suggestions option[value="${agent.name}"]`)).toHaveCount(1);
  const results = page.getByRole("table", { name: "Runs matching the search" });
  await expect(results.getByRole("row")).toHaveCount(2); // the header and the run
  await expect(results).toContainText(marker);
  // The invisible character in the purpose is a visible marker, not an invisible one.
  await expect(results.locator('[data-invisible="U+200B"]')).toHaveCount(1);

  await results.getByRole("link", { name: "Timeline" }).click();
  await page.waitForURL(`**/audit/runs/${run.id}`);
  const events = page.getByRole("table", { name: "Audit events of the run" });
  const submitted = events.getByTestId("audit-event").filter({ hasText: "run.submitted" });
  await expect(submitted).toContainText("the agent submitted the run");
  await expect(submitted).toContainText(`agent ${agent.name}`);
  const reviewed = events.getByTestId("audit-event").filter({ hasText: "run.reviewed" });
  await expect(reviewed).toContainText("a reviewer gave a verdict: approve");
  await expect(reviewed).toContainText(reviewer.email);
  await expect(reviewed).not.toContainText(reviewer.id);
  // Raw JSON: hidden until asked for, one click away.
  const raw = reviewed.locator("pre");
  await expect(raw).toBeHidden();
  await reviewed.getByText("JSON", { exact: true }).click();
  await expect(raw).toBeVisible();
  await expect(raw).toContainText('"verdict": "approve"');
  await expect(page.locator('[data-invisible="U+200B"]').first()).toBeVisible();
});
