/**
 * Risk of a run, from the facts intake stored on it and its findings.
 *
 * Returns plain values only: the effect vocabulary, the run's facts normalized (`runFacts`), a
 * score and its level. Pure: no database, no clock, no Prisma object in or out. Facts come typed
 * from the run's column (runColumn); a run whose facts were never written (`{}` or null) counts as
 * the most dangerous kind, never as harmless.
 */
import type { RunColumnValue } from "@/lib/contracts/run-columns";

export const EFFECTS = ["read_only", "write", "destructive"] as const;
export type Effect = (typeof EFFECTS)[number];
export type RiskLevel = "low" | "medium" | "high";
export type Risk = { score: number; level: RiskLevel };

/** A run's facts as the console shows them. */
export type RunFacts = { effect: Effect; openWorld: boolean; dataClasses: string[]; toolCount: number };

const EFFECT_RISK = { read_only: 0, write: 2, destructive: 4 } as const satisfies Record<Effect, number>;
const DATA_CLASS_RISK = { public: 0, internal: 0, confidential: 1, pii: 2, financial: 2, phi: 3 } as const satisfies Record<string, number>;

export function isEffect(value: string | undefined): value is Effect {
  return (EFFECTS as readonly string[]).includes(value ?? "");
}

/** A run's stored facts as the console shows them. Unclassified means the most dangerous kind. */
export function runFacts(facts: RunColumnValue<"facts"> | null): RunFacts {
  if (!facts || !("effect" in facts)) return { effect: "destructive", openWorld: false, dataClasses: [], toolCount: 0 };
  return { effect: facts.effect, openWorld: facts.openWorld, dataClasses: [...facts.dataClasses], toolCount: facts.toolCount };
}

/** Higher is riskier: effect, then reach outside the registry, regulated data, and findings. */
export function riskScore(facts: RunFacts, findings: readonly { severity: string }[]): number {
  const dataRisk = Math.max(0, ...facts.dataClasses.map((c) => DATA_CLASS_RISK[c as keyof typeof DATA_CLASS_RISK] ?? 3));
  const findingRisk = findings.some((f) => f.severity === "critical" || f.severity === "error") ? 2 : findings.some((f) => f.severity === "warning") ? 1 : 0;
  return EFFECT_RISK[facts.effect] * 10 + (facts.openWorld ? 5 : 0) + dataRisk * 2 + findingRisk;
}

export function riskLevel(score: number): RiskLevel {
  return score >= 40 ? "high" : score >= 20 ? "medium" : "low";
}

/** Score and level together, as both read models show them. */
export function riskOf(facts: RunFacts, findings: readonly { severity: string }[]): Risk {
  const score = riskScore(facts, findings);
  return { score, level: riskLevel(score) };
}
