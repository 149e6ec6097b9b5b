/**
 * The published policy version as a reader in compliance needs it: each policy with its id, what
 * it decides (a run, or the release of a run's result), its effect (permit or forbid), what it
 * leads to (deny, allow, or review by N people of a role), its
 * other annotations and its reason in plain words, in the order of the text; and the text itself.
 *
 * Guarantees: the policies come from the set that decides (./store.ts publishedPolicy, parsed and
 * validated by ./policy-set.ts), so the list cannot disagree with the decisions; plain DTOs; ids,
 * reasons and the text are inert text (lib/untrusted/inert.ts), for components/ui/inert.tsx.
 * Answers null while no version is published (every run is denied then).
 */
import "server-only";
import type { Db } from "@/lib/db";
import { inertText } from "@/lib/untrusted/inert";
import { publishedPolicy } from "./store";

export type PolicyItem = {
  id: string;
  /** run: decides runs; release: decides whether a finished run's result reaches its agent. */
  action: "run" | "release";
  effect: "permit" | "forbid";
  /**
   * What a match leads to: forbid denies (the run, or the result is withheld); a permit with
   * approvals sends the run to review (or holds the result for release); otherwise it allows.
   */
  outcome: "deny" | "review" | "allow";
  approvals: number;
  role: string | null;
  maxWritesPerTool: number | null;
  reason: string;
};

export type PublishedPolicyView = { version: number; text: string; policies: PolicyItem[] };

export async function publishedPolicyView(db: Db): Promise<PublishedPolicyView | null> {
  const published = await publishedPolicy(db);
  if (!published) return null;
  const { text } = await db.policyVersion.findUniqueOrThrow({ where: { id: published.id }, select: { text: true } });
  return {
    version: published.version,
    text: inertText(text),
    policies: [...published.prepared.policies.values(), ...(published.prepared.release?.policies.values() ?? [])]
      .sort((a, b) => text.indexOf(a.source) - text.indexOf(b.source))
      .map((policy) => ({
        id: inertText(policy.id, 200),
        action: policy.action,
        effect: policy.effect,
        outcome: policy.effect === "forbid" ? "deny" : policy.approvals > 0 ? "review" : "allow",
        approvals: policy.approvals,
        role: policy.role ?? null,
        maxWritesPerTool: policy.maxWritesPerTool ?? null,
        reason: inertText(policy.reason, 2_000),
      })),
  };
}
