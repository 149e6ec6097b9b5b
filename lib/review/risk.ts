/**
 * Risk of a run as the console labels it: the level follows from what policy decided, so the
 * label never contradicts the decision (a read of pii that policy sends to two reviewers is not
 * "low risk"). deny → "blocked"; escalate to two or more approvals → "high"; to one → "medium";
 * allow → "low"; a run policy has not decided yet counts as "high", never as harmless.
 *
 * Within a level, the run's facts and findings order runs (effect, reach outside the registry,
 * regulated data, findings), so the queue's sort by score puts blocked and high first and the
 * riskiest of a level before the rest. Returns plain values only: the effect vocabulary, the
 * run's facts normalized (`runFacts`), a score, its level and the label shown. Pure: no database,
 * no clock, no Prisma object in or out. A run whose facts were never written (`{}` or null)
 * counts as the most dangerous kind.
 */
import type { RunColumnValue } from "@/lib/contracts/run-columns";

export const EFFECTS = ["read_only", "write", "destructive"] as const;
export type Effect = (typeof EFFECTS)[number];
export type RiskLevel = "blocked" | "high" | "medium" | "low";
export type Risk = { score: number; level: RiskLevel; label: string };

/** What policy decided about a run: its decision (null until policy has run) and the approvals it asked for. */
export type PolicyOutcome = { decision: "allow" | "escalate" | "deny" | null; approvalsRequired: number };

/** A run's facts as the console shows them. */
export type RunFacts = { effect: Effect; openWorld: boolean; dataClasses: string[]; toolCount: number };

const EFFECT_RISK = { read_only: 0, write: 2, destructive: 4 } as const satisfies Record<Effect, number>;
const DATA_CLASS_RISK = { public: 0, internal: 0, confidential: 1, pii: 2, financial: 2, phi: 3 } as const satisfies Record<string, number>;
/** Levels in sort order; every facts score is below LEVEL_STEP, so a level always outranks the facts. */
const LEVEL_RANK = { blocked: 3, high: 2, medium: 1, low: 0 } as const satisfies Record<RiskLevel, number>;
const LEVEL_STEP = 100;
const LABEL = { blocked: "blocked", high: "high risk", medium: "medium risk", low: "low risk" } as const satisfies Record<RiskLevel, string>;

export function isEffect(value: string | undefined): value is Effect {
  return (EFFECTS as readonly string[]).includes(value ?? "");
}

/** A run's stored facts as the console shows them. Unclassified means the most dangerous kind. */
export function runFacts(facts: RunColumnValue<"facts"> | null): RunFacts {
  if (!facts || !("effect" in facts)) return { effect: "destructive", openWorld: false, dataClasses: [], toolCount: 0 };
  return { effect: facts.effect, openWorld: facts.openWorld, dataClasses: [...facts.dataClasses], toolCount: facts.toolCount };
}

/** Higher is riskier, from 0 to 53: effect, then reach outside the registry, regulated data, and findings. */
export function riskScore(facts: RunFacts, findings: readonly { severity: string }[]): number {
  const dataRisk = Math.max(0, ...facts.dataClasses.map((c) => DATA_CLASS_RISK[c as keyof typeof DATA_CLASS_RISK] ?? 3));
  const findingRisk = findings.some((f) => f.severity === "critical" || f.severity === "error") ? 2 : findings.some((f) => f.severity === "warning") ? 1 : 0;
  return EFFECT_RISK[facts.effect] * 10 + (facts.openWorld ? 5 : 0) + dataRisk * 2 + findingRisk;
}

/** The level policy's decision implies. */
export function riskLevel(outcome: PolicyOutcome): RiskLevel {
  switch (outcome.decision) {
    case "deny":
      return "blocked";
    case "escalate":
      return outcome.approvalsRequired >= 2 ? "high" : "medium";
    case "allow":
      return "low";
    case null:
      return "high";
  }
}

/** Level, label and sort score together, as both read models show them. */
export function riskOf(outcome: PolicyOutcome, facts: RunFacts, findings: readonly { severity: string }[]): Risk {
  const level = riskLevel(outcome);
  return { score: LEVEL_RANK[level] * LEVEL_STEP + riskScore(facts, findings), level, label: LABEL[level] };
}
