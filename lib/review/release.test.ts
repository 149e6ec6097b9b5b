/**
 * A withheld result, end to end on real parts (the demo ledger, a strict sandbox, the shipped
 * policies, PostgreSQL): a read-only script whose checks.sum fails ends check_failed; its agent
 * gets CHECK_FAILED with the numbers and what to do, and no result; a reviewer releases it (the
 * owner may not, a reason is required, the release is bound to the result seen), and the agent
 * then gets the stored result. The database refuses a release without its event.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { submitRun } from "@/lib/intake/submit";
import { getRun, type RunView } from "@/lib/runs/service";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { loadDashboard } from "@/lib/runs/dashboard";
import { queueView, waitingForYouCount } from "./queue-presenter";
import { releaseResult, resultDigestOf } from "./release";

type User = Extract<Actor, { type: "user" }>;
let ledger: LedgerRuntime;
let reviewer: User;
let owner: User;
let runId: string;
let view: RunView;

const SCRIPT = `const page = await tools.ledger.listInvoices({ limit: 20 });
const total = page.invoices.reduce((s, i) => s + i.amountMinor, 0);
console.log("claimed total", Math.round(total * 1.07));
// A total off by 7%, as when refunds are counted twice.
await checks.sum("invoice total", page.invoices, "amountMinor", Math.round(total * 1.07));
return { total: Math.round(total * 1.07) };`;

beforeAll(async () => {
  ledger = await startLedgerRuntime("release-bot");
  const system: Actor = { type: "system", name: "test" };
  const made = await ledger.db.prisma.$transaction((tx) => createUser(tx, system, { email: "rita@example.com", role: "reviewer" }));
  reviewer = { type: "user", id: made.id, email: "rita@example.com", role: "reviewer" };
  const o = await ledger.db.prisma.user.findUniqueOrThrow({ where: { email: "owner@example.com" } });
  // The agent's owner, given the reviewer role for this test: separation of duties still refuses them.
  await ledger.db.prisma.user.update({ where: { id: o.id }, data: { role: "reviewer" } });
  owner = { type: "user", id: o.id, email: o.email, role: "reviewer" };
  const submitted = await submitRun(ledger.runtime, ledger.agent, { code: SCRIPT, purpose: "invoice total", language: "javascript" });
  runId = submitted.runId;
  view = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 30 });
}, 90_000);
afterAll(() => ledger?.close());

describe("a failed check withholds the result", () => {
  it("ends check_failed: the agent gets CHECK_FAILED with the numbers and what to do next, the checks, and no result", () => {
    expect(view.status).toBe("check_failed");
    expect(view.error).toMatchObject({ code: "CHECK_FAILED", message: expect.stringMatching(/check "invoice total" \(sum\) failed: .* \(off by \d+\)/) });
    expect(view.error?.next).toMatch(/^Do not use the result/);
    expect(view.checks).toEqual([expect.objectContaining({ kind: "sum", label: "invoice total", ok: false })]);
    expect(view.rows?.read).toEqual({ "ledger.listInvoices": 20 });
    expect(view).not.toHaveProperty("result");
    // Nothing the script wrote carries it out instead: its logs are withheld with the result.
    expect(view.logs).toEqual([{ level: "warn", text: "The logs are withheld with the result." }]);
    expect(view.consoleUrl).toMatch(new RegExp(`/runs/${runId}$`));
  });

  it("a check the script declares but never runs fails the run: policy decided on it", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `const page = await tools.ledger.listInvoices({ limit: 5 });\nif (page.invoices.length > 1000) await checks.sum("never", page.invoices, "amountMinor", 0);\nreturn page.invoices.length;`,
      purpose: "a check in dead code",
      language: "javascript",
    });
    const ended = await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(ended).toMatchObject({ status: "check_failed", error: { code: "CHECK_FAILED", message: expect.stringContaining("checks.sum, which never ran") } });
    expect(ended).not.toHaveProperty("result");
  });

  it("is kept for the audit log", async () => {
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(row.result).toMatchObject({ total: expect.any(Number) });
    expect(row.releasedAt).toBeNull();
  });

  it("refuses the agent's owner, a release without a reason, and one bound to another result", async () => {
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const seen = { resultDigest: resultDigestOf(row.result) };
    await expect(releaseResult(ledger.db.prisma, owner, { runId, comment: "mine", seen })).rejects.toMatchObject({ code: "forbidden" });
    await expect(releaseResult(ledger.db.prisma, reviewer, { runId, comment: "  ", seen })).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("A reason is required"),
    });
    await expect(releaseResult(ledger.db.prisma, reviewer, { runId, comment: "ok", seen: { resultDigest: "0".repeat(64) } })).rejects.toMatchObject({
      code: "conflict",
      details: { changed: ["resultDigest"] },
    });
    const agentActor = ledger.agent;
    await expect(releaseResult(ledger.db.prisma, agentActor, { runId, comment: "x", seen })).rejects.toMatchObject({ code: "forbidden" });
    expect(await ledger.db.prisma.resultRelease.count()).toBe(0);
  });

  it("the database refuses a releasedAt written without its event", async () => {
    await expect(ledger.db.prisma.run.update({ where: { id: runId }, data: { releasedAt: new Date() } })).rejects.toThrow(
      /released without a run.result_released event/,
    );
  });

  it("waits in the review queue and its badge for a release, as a reviewer may give one; not for the agent's owner", async () => {
    const queued = await queueView(ledger.db.prisma, reviewer);
    expect(queued.items.find((item) => item.id === runId)).toMatchObject({
      waitingFor: "release",
      status: "check_failed",
      approvalsRequired: 1,
      blockedBecause: null,
    });
    expect(await waitingForYouCount(ledger.db.prisma, reviewer)).toBeGreaterThanOrEqual(1);
    const ownersView = await queueView(ledger.db.prisma, owner);
    expect(ownersView.items.find((item) => item.id === runId)?.blockedBecause).toBe("own_agent");
    expect((await loadDashboard(ledger.db.prisma)).pendingReviews).toBeGreaterThanOrEqual(1);
  });

  it("a reviewer releases it with a reason: the agent gets the stored result and who released it; the status stays check_failed", async () => {
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const released = await releaseResult(ledger.db.prisma, reviewer, {
      runId,
      comment: "The 7% is the VAT the script added on purpose.",
      seen: { resultDigest: resultDigestOf(row.result) },
    });
    expect(released).toMatchObject({ released: true, releases: { received: 1, required: 1, by: ["rita@example.com"] } });
    const after = await getRun(ledger.runtime, ledger.agent, { runId });
    expect(after).toMatchObject({ status: "check_failed", result: row.result, released: { by: ["rita@example.com"] } });
    expect(after.logs?.[0]?.text).toMatch(/^claimed total \d+$/);
    expect(after.error).toBeUndefined();
    const events = await ledger.db.prisma.auditEvent.findMany({ where: { subjectId: runId, action: { in: ["run.release_approved", "run.result_released"] } } });
    expect(events.map((e) => e.action)).toEqual(["run.release_approved", "run.result_released"]);
    await expect(
      releaseResult(ledger.db.prisma, reviewer, { runId, comment: "again", seen: { resultDigest: resultDigestOf(row.result) } }),
    ).rejects.toMatchObject({ code: "conflict", message: expect.stringContaining("already released") });
    // Released, it no longer waits for anyone.
    expect((await queueView(ledger.db.prisma, reviewer)).items.map((item) => item.id)).not.toContain(runId);
  });
});
