/**
 * Evidence a third party can check, end to end: an agent (the MCP SDK's Client) asks for a refund,
 * two reviewers approve it in Chromium, it runs, and the agent records what it did with the
 * result. Compliance then signs in, finds the run by `issueRefund` alone, opens its timeline,
 * downloads its evidence file from the console, and checks it with `airlock audit verify-evidence`
 * against the public key only — no database, as an outside auditor would. One changed byte in the
 * file, in a tool call's amount or in the run's status, makes the verifier refuse it.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterPreview, expect, test } from "./fixtures";
import { approveInBrowser, createReviewers, type Reviewers } from "./reviewers";

type View = { runId: string; status: string; result?: unknown };

const suffix = randomBytes(4).toString("hex");
let reviewers: Reviewers;
const work = mkdtempSync(join(tmpdir(), "airlock-e2e-evidence-"));

function view(result: unknown): View {
  return JSON.parse((result as { content: { text: string }[] }).content[0]!.text) as View;
}

async function finished(agent: Client, runId: string): Promise<View> {
  for (let i = 0; i < 6; i++) {
    const current = view(await agent.callTool({ name: "get_run", arguments: { runId, waitSeconds: 20 } }));
    if (!["pending_review", "approved", "queued", "running"].includes(current.status)) return current;
  }
  throw new Error(`run ${runId} did not finish`);
}

/** The CLI as an auditor runs it: no DATABASE_URL, and only the files it is handed. */
function airlock(args: string[], env: Record<string, string> = {}) {
  const childEnv = { ...process.env };
  for (const name of Object.keys(childEnv)) if (name === "DATABASE_URL" || name.startsWith("AIRLOCK_")) delete childEnv[name];
  return spawnSync(process.execPath, [join(import.meta.dirname, "..", "bin", "airlock.mjs"), ...args], {
    env: { ...childEnv, AIRLOCK_DATA_DIR: join(work, "auditor"), ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
}

/** The file with one byte replaced: the first `from` at or after `anchor` becomes `to` (same length). */
function oneByteChanged(text: string, anchor: string, from: string, to: string): string {
  const at = text.indexOf(from, text.indexOf(anchor));
  expect(at, `"${from}" after "${anchor}"`).toBeGreaterThan(-1);
  expect([...from].filter((c, i) => c !== to[i]).length, "one byte differs").toBe(1);
  expect(Buffer.byteLength(to)).toBe(Buffer.byteLength(from));
  return text.slice(0, at) + to + text.slice(at + from.length);
}

test.beforeAll(async ({ state }) => {
  reviewers = await createReviewers(state.databaseUrl, "evidence");
});

test("compliance finds a refund by issueRefund, downloads its evidence, and the verifier accepts it offline and refuses one changed byte", async ({
  page,
  browser,
  baseURL,
  state,
  loginAs,
  mcpClient: agent,
}) => {
  test.setTimeout(180_000);
  const paid = view(
    await agent.callTool({
      name: "submit_run",
      arguments: { code: `return (await tools.ledger.listInvoices({ status: "paid", limit: 100 })).invoices.map((i) => i.id);`, purpose: "find paid invoices" },
    }),
  );
  expect(paid.status).toBe("succeeded");
  const invoiceId = (paid.result as string[]).at(-1)!;

  const code = [
    `// evidence ${suffix}`,
    `const refund = await tools.ledger.issueRefund({ invoiceId: ${JSON.stringify(invoiceId)}, amountMinor: 7, reason: "duplicate charge ${suffix}", idempotencyKey: "evidence-${suffix}" });`,
    `return { refundId: refund.refund.id };`,
  ].join("\n");
  const submitted = view(
    await agent.callTool({
      name: "submit_run",
      arguments: {
        code,
        purpose: `Refund a duplicate charge (${suffix})`,
        provenance: { model: "e2e-model", conversationId: `conv-${suffix}`, prompt: "The customer was charged twice; refund the duplicate." },
      },
    }),
  );
  expect(await afterPreview(agent, submitted.runId)).toBe("pending_review");
  await approveInBrowser(browser, baseURL!, reviewers, submitted.runId);
  expect(await finished(agent, submitted.runId)).toMatchObject({ status: "succeeded" });
  const outcome = await agent.callTool({
    name: "record_outcome",
    arguments: { runId: submitted.runId, action: "answered_user", detail: "Told the customer." },
  });
  expect(outcome.isError).toBeFalsy();

  await loginAs("compliance");
  await page.goto(`/audit?q=${encodeURIComponent(`issueRefund ${suffix}`)}`);
  const results = page.getByRole("table", { name: "Runs matching the search" });
  await expect(results.getByRole("row")).toHaveCount(2); // the header and the run
  await results.getByRole("link", { name: "Timeline" }).click();
  await page.waitForURL(`**/audit/runs/${submitted.runId}`);
  const events = page.getByRole("table", { name: "Audit events of the run" });
  await expect(events.getByTestId("audit-event").filter({ hasText: "run.outcome_recorded" })).toContainText("answered the user");

  const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("evidence-download").click()]);
  const file = join(work, "run.evidence.json");
  await download.saveAs(file);
  const text = readFileSync(file, "utf8");

  // The public key is what the auditor is given; the CLI exports it from the server's key file.
  const exported = airlock(["audit", "public-key"], { AIRLOCK_DATA_DIR: state.dataDir });
  expect(exported.status, exported.stderr).toBe(0);
  const publicKey = join(work, "airlock-audit.pub.pem");
  writeFileSync(publicKey, exported.stdout);
  expect(exported.stdout).toContain("BEGIN PUBLIC KEY");

  const accepted = airlock(["audit", "verify-evidence", file, "--public-key", publicKey]);
  expect(accepted.status, accepted.stderr).toBe(0);
  expect(accepted.stdout).toMatch(new RegExp(`^OK: run ${submitted.runId}: `));
  expect(accepted.stdout).toMatch(/2 review\(s\)/);

  // 7 → 9 in the refund's amount, in the applied call's arguments.
  const amount = join(work, "amount.evidence.json");
  writeFileSync(amount, oneByteChanged(text, `"phase": "apply"`, `"amountMinor": 7`, `"amountMinor": 9`));
  const refusedAmount = airlock(["audit", "verify-evidence", amount, "--public-key", publicKey]);
  expect(refusedAmount.status).toBe(1);
  expect(refusedAmount.stdout).toBe("");
  expect(refusedAmount.stderr).toMatch(/^MISMATCH: run .*\n {2}the file: its signature does not verify/);
  expect(refusedAmount.stderr).toMatch(/tool call \d+ arguments: digest does not match the sealed digest/);

  // "succeeded" → "succeedee" in the run's status: caught by the chain even without the key.
  const status = join(work, "status.evidence.json");
  writeFileSync(status, oneByteChanged(text, `"run": {`, `"status": "succeeded"`, `"status": "succeedee"`));
  const refusedStatus = airlock(["audit", "verify-evidence", status]);
  expect(refusedStatus.status).toBe(1);
  expect(refusedStatus.stderr).toContain(`run status: "succeedee" does not match`);
});
