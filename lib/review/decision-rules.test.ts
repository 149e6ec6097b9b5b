/**
 * decisionBlocker, the one rule for who may decide a run (decideRun refuses with it; the run page
 * and the queue offer with it), and the AppError decideRun throws for each reason.
 */
import { describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { decisionBlocker, decisionRefusal, type DecisionBlockerCode, type DecisionSubject } from "./decision-rules";
import { viewerView } from "./run-sections";

const NOW = new Date("2026-12-01T12:00:00.000Z");
const RUN_ID = "11111111-1111-4111-8111-111111111111";
const alice: Actor = { type: "user", id: "alice", email: "alice@example.com", role: "reviewer" };
const owner: Actor = { type: "user", id: "owner", email: "owner@example.com", role: "reviewer" };
const compliance: Actor = { type: "user", id: "carol", email: "carol@example.com", role: "compliance" };
const admin: Actor = { type: "user", id: "root", email: "root@example.com", role: "admin" };
const agentWithReview: Actor = { type: "agent", id: "a1", name: "bot", ownerId: "owner", scopes: ["runs:review"] };

function run(overrides: Partial<DecisionSubject> = {}): DecisionSubject {
  return {
    id: RUN_ID,
    status: "pending_review",
    reviewerRole: null,
    reviewExpiresAt: new Date(NOW.getTime() + 60_000),
    agent: { ownerId: "owner", name: "mailer" },
    reviews: [],
    ...overrides,
  };
}

type Row = [name: string, subject: DecisionSubject, actor: Actor, code: DecisionBlockerCode | null, message?: string];

const TABLE: Row[] = [
  ["a reviewer on a pending run", run(), alice, null],
  ["no deadline at all", run({ reviewExpiresAt: null }), alice, null],
  ["someone else's vote does not block", run({ reviews: [{ reviewerId: "bob", verdict: "approve" }] }), alice, null],
  ["the policy's reviewer role, held", run({ reviewerRole: "reviewer" }), alice, null],
  ["a role without runs:review", run(), compliance, "not_reviewer", "This needs the runs:review permission, which your role does not have."],
  ["an admin (no runs:review either)", run(), admin, "not_reviewer"],
  ["an agent, even holding runs:review", run(), agentWithReview, "not_reviewer", "Only a person can review a run."],
  ["the owner of the run's agent", run(), owner, "own_agent", "You own the agent mailer, so you cannot decide its runs; another reviewer must."],
  ["another reviewer role", run({ reviewerRole: "compliance" }), alice, "reviewer_role", "Policy asks a compliance to review this run; your role is reviewer."],
  [
    "a decided run",
    run({ status: "changes_requested" }),
    alice,
    "not_pending",
    `Run ${RUN_ID} is already changes requested; it is no longer waiting for review.`,
  ],
  [
    "a deadline exactly now",
    run({ reviewExpiresAt: NOW }),
    alice,
    "expired",
    `The review of run ${RUN_ID} expired at ${NOW.toISOString()}; the agent must submit it again.`,
  ],
  [
    "a second vote",
    run({ reviews: [{ reviewerId: "alice", verdict: "request_changes" }] }),
    alice,
    "already_voted",
    "You already voted on this run (request changes); quorum needs a different person.",
  ],
  // The first reason wins, in a fixed order.
  ["no scope beats ownership", run(), { ...compliance, id: "owner" }, "not_reviewer"],
  ["ownership beats a decided run", run({ status: "succeeded" }), owner, "own_agent"],
  ["the role beats a decided run", run({ status: "queued", reviewerRole: "compliance" }), alice, "reviewer_role"],
  ["a decided run beats its deadline", run({ status: "expired", reviewExpiresAt: new Date(0) }), alice, "not_pending"],
  ["the deadline beats an earlier vote", run({ reviewExpiresAt: new Date(0), reviews: [{ reviewerId: "alice", verdict: "approve" }] }), alice, "expired"],
];

describe("decisionBlocker", () => {
  it.each(TABLE)("%s", (_name, subject, actor, code, message) => {
    const blocker = decisionBlocker(subject, actor, NOW);
    expect(blocker?.code ?? null).toBe(code);
    if (message) expect(blocker?.message).toBe(message);
  });

  it("reads the clock when no time is given", () => {
    expect(decisionBlocker(run({ reviewExpiresAt: new Date(Date.now() - 1) }), alice)?.code).toBe("expired");
    expect(decisionBlocker(run({ reviewExpiresAt: new Date(Date.now() + 60_000) }), alice)).toBeNull();
  });
});

describe("decisionRefusal", () => {
  const REFUSALS: [DecisionBlockerCode, DecisionSubject, Actor, string, Record<string, unknown>][] = [
    ["not_reviewer", run(), compliance, "forbidden", { scope: "runs:review" }],
    ["own_agent", run(), owner, "forbidden", { reason: "own_agent" }],
    ["reviewer_role", run({ reviewerRole: "compliance" }), alice, "forbidden", { reason: "reviewer_role" }],
    ["not_pending", run({ status: "succeeded" }), alice, "conflict", { status: "succeeded" }],
    ["expired", run({ reviewExpiresAt: new Date(0) }), alice, "conflict", { status: "expired" }],
    ["already_voted", run({ reviews: [{ reviewerId: "alice", verdict: "approve" }] }), alice, "conflict", { reason: "already_voted" }],
  ];

  it.each(REFUSALS)("%s → %s", (code, subject, actor, errorCode, details) => {
    const blocker = decisionBlocker(subject, actor, NOW)!;
    expect(blocker.code).toBe(code);
    const error = decisionRefusal(blocker, subject);
    expect(error).toMatchObject({ code: errorCode, message: blocker.message });
    expect(error.details).toEqual(details);
  });
});

describe("the run page's viewer", () => {
  it("offers the form exactly when decisionBlocker allows, with its words otherwise", () => {
    expect(viewerView(run(), alice, NOW)).toEqual({
      reviewer: true,
      canDecide: true,
      cannotDecideCode: null,
      cannotDecideBecause: null,
      canCancel: true,
      myVerdict: null,
    });
    const voted = run({ reviews: [{ reviewerId: "alice", verdict: "approve" }] });
    expect(viewerView(voted, alice, NOW)).toMatchObject({
      canDecide: false,
      cannotDecideCode: "already_voted",
      cannotDecideBecause: decisionBlocker(voted, alice, NOW)!.message,
      myVerdict: "approve",
    });
    expect(viewerView(run(), compliance, NOW)).toMatchObject({ reviewer: false, canDecide: false, cannotDecideCode: "not_reviewer", canCancel: false });
  });

  it("keeps an agent's name inert in the reason (escape sequences removed)", () => {
    const view = viewerView(run({ agent: { ownerId: "alice", name: "evil\u001b[2Jname" } }), alice, NOW);
    expect(view.cannotDecideBecause).toBe("You own the agent evilname, so you cannot decide its runs; another reviewer must.");
  });
});
