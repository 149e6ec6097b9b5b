/**
 * The risk label follows from what policy decided: decided by the shipped default policies, shown
 * by the run page's and the queue's read models on a real database. A read of pii that policy
 * sends to two reviewers is "high risk", never "low risk"; the queue puts it first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import type { UserActor } from "@/lib/auth/session";
import { createUser } from "@/lib/auth/users";
import type { ScriptFacts } from "@/lib/contracts/analysis";
import type { Actor } from "@/lib/contracts/scopes";
import { decide } from "@/lib/policy/decide";
import { defaultPolicyText, preparePolicySet } from "@/lib/policy/policy-set";
import { buildPolicyRequest } from "@/lib/policy/request";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { queueView } from "./queue-presenter";
import { riskLevel, riskOf, riskScore, runFacts, type RunFacts } from "./risk";
import { runDetail } from "./run-presenter";

const PII_READ: ScriptFacts = { effect: "read_only", openWorld: false, dataClasses: ["pii"], toolCount: 1, readOnlyDataClasses: ["pii"], checks: [] };
const PUBLIC_READ: ScriptFacts = { effect: "read_only", openWorld: false, dataClasses: ["public"], toolCount: 1, readOnlyDataClasses: ["public"], checks: [] };
const PUBLIC_WRITE: ScriptFacts = { effect: "write", openWorld: false, dataClasses: ["public"], toolCount: 1, readOnlyDataClasses: [], checks: [] };
const DANGEROUS: RunFacts = { effect: "destructive", openWorld: true, dataClasses: ["phi"], toolCount: 3 };
const CRITICAL = [{ severity: "critical" }];

/** What the shipped default policies decide for a script with these facts. */
function decideDefaults(facts: ScriptFacts) {
  return decide(
    buildPolicyRequest({
      agent: { id: "agent-1", ownerId: "user-1" },
      facts,
      findings: [],
      capabilitySet: ["ledger.listCustomers"],
      inputDataClasses: [],
      limits: { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 100 },
      isolation: "strict",
    }),
    preparePolicySet(defaultPolicyText()),
  );
}

describe("riskOf: the level is what policy decided", () => {
  it("labels a read of pii that the shipped policies send to two reviewers high risk, not low risk", () => {
    const decision = decideDefaults(PII_READ);
    expect(decision).toMatchObject({ decision: "escalate", approvalsRequired: 2 });
    // The facts alone score it among the least risky (a read), which is how it was labelled "low risk".
    expect(riskScore(PII_READ, [])).toBeLessThan(10);
    expect(riskOf(decision, PII_READ, [])).toMatchObject({ level: "high", label: "high risk" });
  });

  it("maps deny to blocked, two or more approvals to high, one to medium, allow to low", () => {
    expect(riskLevel({ decision: "deny", approvalsRequired: 0 })).toBe("blocked");
    expect(riskLevel({ decision: "escalate", approvalsRequired: 2 })).toBe("high");
    expect(riskLevel({ decision: "escalate", approvalsRequired: 3 })).toBe("high");
    expect(riskLevel({ decision: "escalate", approvalsRequired: 1 })).toBe("medium");
    expect(riskLevel({ decision: "allow", approvalsRequired: 0 })).toBe("low");
    expect(riskOf({ decision: "deny", approvalsRequired: 0 }, DANGEROUS, CRITICAL).label).toBe("blocked");
    expect(riskOf({ decision: "escalate", approvalsRequired: 1 }, DANGEROUS, []).label).toBe("medium risk");
  });

  it("agrees with the shipped policies for a public read (low), a write (medium) and a destructive write (high)", () => {
    expect(riskOf(decideDefaults(PUBLIC_READ), PUBLIC_READ, []).level).toBe("low");
    expect(riskOf(decideDefaults(PUBLIC_WRITE), PUBLIC_WRITE, []).level).toBe("medium");
    expect(riskOf(decideDefaults({ ...PUBLIC_WRITE, effect: "destructive" }), PUBLIC_WRITE, []).level).toBe("high");
  });

  it("counts a run policy has not decided yet as high, never as harmless", () => {
    expect(riskOf({ decision: null, approvalsRequired: 0 }, runFacts(null), []).level).toBe("high");
  });

  it("scores every level above the one below it whatever the facts, and the riskier facts first within a level", () => {
    const blocked = riskOf({ decision: "deny", approvalsRequired: 0 }, PUBLIC_READ, []);
    const high = riskOf({ decision: "escalate", approvalsRequired: 2 }, PUBLIC_READ, []);
    const medium = riskOf({ decision: "escalate", approvalsRequired: 1 }, DANGEROUS, CRITICAL);
    const low = riskOf({ decision: "allow", approvalsRequired: 0 }, DANGEROUS, CRITICAL);
    expect([low, blocked, medium, high].sort((a, b) => b.score - a.score).map((r) => r.level)).toEqual(["blocked", "high", "medium", "low"]);
    expect(riskOf({ decision: "escalate", approvalsRequired: 2 }, DANGEROUS, []).score).toBeGreaterThan(high.score);
  });
});

describe("the run page and the queue show the policy's risk", () => {
  const system: Actor = { type: "system", name: "risk-test" };
  let db: TestDatabase;
  let reviewer: UserActor;
  let piiRead: string;
  let oneApprovalWrite: string;

  async function pendingRun(agentId: string, purpose: string, facts: ScriptFacts, approvalsRequired: number): Promise<string> {
    const run = await db.prisma.run.create({
      data: {
        agentId,
        status: "pending_review",
        decision: "escalate",
        approvalsRequired,
        reviewerRole: "reviewer",
        language: "typescript",
        code: "return 1;",
        codeSha256: "a".repeat(64),
        purpose,
        facts,
        inputsDigest: "b".repeat(64),
        requestDigest: "c".repeat(64),
      },
    });
    return run.id;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
    const created = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "rita@example.com", role: "reviewer" }));
    reviewer = { type: "user", id: created.id, email: "rita@example.com", role: "reviewer" };
    const agent = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "crm-bot", ownerEmail: "owner@example.com" }));
    // The write is older, so before this change (facts only: a write outscored a read) it led the queue.
    oneApprovalWrite = await pendingRun(agent.agentId, "update an invoice note", PUBLIC_WRITE, 1);
    piiRead = await pendingRun(agent.agentId, "list customers", PII_READ, 2);
  });
  afterAll(() => db.drop());

  it("labels the pii read high risk on its run page", async () => {
    expect((await runDetail(db.prisma, piiRead, reviewer))?.risk).toMatchObject({ level: "high", label: "high risk" });
    expect((await runDetail(db.prisma, oneApprovalWrite, reviewer))?.risk).toMatchObject({ level: "medium", label: "medium risk" });
  });

  it("puts the two-approval pii read before the older one-approval write in the queue", async () => {
    const view = await queueView(db.prisma, reviewer);
    expect(view.items.map((item) => [item.id, item.risk.level])).toEqual([
      [piiRead, "high"],
      [oneApprovalWrite, "medium"],
    ]);
  });
});
