/**
 * The operator's log as a person and a collector read it, from a real process: pretty is one
 * readable line per change (with the review link on an escalation), JSON one object per line,
 * `silent` prints nothing, and a bad AIRLOCK_LOG_FORMAT stops the process naming the variable.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { childProcessEnv } from "@/lib/env";

const root = join(import.meta.dirname, "..");

function logIn(env: Record<string, string>) {
  const script = `
    const { logRunChange, logReviewVote } = await import("./lib/log.ts");
    logRunChange({ runId: "r-1", from: ["analyzed"], to: "pending_review", actor: { type: "system", name: "policy" },
      decision: { decision: "escalate", reasons: ["review-refunds"], approvalsRequired: 2 } });
    logRunChange({ runId: "r-1", from: ["running"], to: "failed", actor: { type: "system", name: "executor" }, code: "TIMEOUT" });
    logReviewVote({ runId: "r-1", reviewerId: "u-1", reviewerEmail: "rita@example.com", verdict: "approve", received: 1, required: 2 });`;
  const result = spawnSync(process.execPath, ["--conditions=react-server", "--import", "tsx", "--input-type=module", "-e", script], {
    cwd: root,
    env: { ...childProcessEnv(), AIRLOCK_PUBLIC_URL: "https://airlock.example.com", AIRLOCK_LOG_LEVEL: "info", ...env },
    encoding: "utf8",
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("log lines", () => {
  it("pretty: one readable line per event, the escalation with its review link", () => {
    const { status, stdout } = logIn({ AIRLOCK_LOG_FORMAT: "pretty" });
    expect(status).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /INFO.*run r-1 analyzed → pending_review \(policy: escalate; review-refunds\) — review: https:\/\/airlock\.example\.com\/runs\/r-1/,
    );
    expect(lines[1]).toMatch(/INFO.*run r-1 running → failed TIMEOUT/);
    expect(lines[2]).toMatch(/INFO.*run r-1 approve by rita@example\.com \(user:u-1; 1 of 2 approvals\)/);
  }, 30_000);

  it("json: one object per line with the fields a collector filters on", () => {
    const { status, stdout } = logIn({ AIRLOCK_LOG_FORMAT: "json" });
    expect(status).toBe(0);
    const entries = stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries).toEqual([
      expect.objectContaining({
        level: 30,
        event: "run.escalated",
        runId: "r-1",
        from: "analyzed",
        to: "pending_review",
        actor: "system:policy",
        decision: "escalate",
        reasons: ["review-refunds"],
        approvalsRequired: 2,
        reviewUrl: "https://airlock.example.com/runs/r-1",
      }),
      expect.objectContaining({ event: "run.status", to: "failed", code: "TIMEOUT" }),
      expect.objectContaining({
        event: "run.reviewed",
        reviewer: "u-1",
        reviewerEmail: "rita@example.com",
        verdict: "approve",
        approvals: 1,
        approvalsRequired: 2,
      }),
    ]);
  }, 30_000);

  it("silent prints nothing; a bad format stops the process naming the variable", () => {
    expect(logIn({ AIRLOCK_LOG_LEVEL: "silent" })).toMatchObject({ status: 0, stdout: "" });
    const bad = logIn({ AIRLOCK_LOG_FORMAT: "xml" });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("AIRLOCK_LOG_FORMAT must be pretty or json");
  }, 30_000);
});
