/**
 * The published policy for people who read it rather than write it: how policies combine, then
 * each policy with its id, effect, what it leads to and its reason; the Cedar text below, folded,
 * with long lines wrapped. Every string is rendered through components/ui/inert.tsx.
 */
import { Inert } from "@/components/ui/inert";
import { Badge } from "@/components/ui/primitives";
import type { PolicyItem, PublishedPolicyView } from "@/lib/policy/published-presenter";

function Outcome({ policy }: { policy: PolicyItem }) {
  const release = policy.action === "release";
  if (policy.outcome === "deny") return <Badge tone="bad">{release ? "withholds the result" : "denies the run"}</Badge>;
  if (policy.outcome === "allow") return <Badge tone="good">{release ? "hands the result over" : "allows the run"}</Badge>;
  return (
    <Badge tone="warn">
      {release ? "holds the result for " : "needs "}
      {policy.approvals} {release ? "release" : "approval"}
      {policy.approvals === 1 ? "" : "s"}
      {policy.role ? ` (role: ${policy.role})` : ""}
    </Badge>
  );
}

export function PublishedPolicy({ view }: { view: PublishedPolicyView }) {
  return (
    <div className="space-y-4">
      <p className="text-sm text-slate-700">
        How the policies combine: a matching <strong>forbid</strong> policy denies the run, whatever else matches. Otherwise, if matching{" "}
        <strong>permit</strong> policies ask for approvals, the run waits for reviewers (the largest number asked for). Otherwise a matching permit policy
        allows the run. A run that no policy permits is denied, and so is a run whose evaluation fails.
      </p>
      <p className="text-sm text-slate-700">
        Release policies decide, the same way, whether a finished run&apos;s result reaches its agent: a forbid withholds it, a permit with approvals holds it
        until that many reviewers release it, and a plain permit hands it over. A result that no release permit matches is withheld. With no release policy at
        all, every result is handed over.
      </p>
      <ol className="divide-y divide-slate-100 rounded-lg border border-slate-200" aria-label={`Policies of v${view.version}`}>
        {view.policies.map((policy) => (
          <li key={policy.id} className="space-y-1 px-4 py-3" data-testid={`policy-${policy.id}`}>
            <div className="flex flex-wrap items-center gap-2">
              <span className="font-mono text-sm font-semibold break-all text-slate-900">
                <Inert text={policy.id} />
              </span>
              <Badge tone={policy.effect === "forbid" ? "bad" : "neutral"} data-testid="effect">
                {policy.effect}
              </Badge>
              <Outcome policy={policy} />
              {policy.maxWritesPerTool !== null ? <Badge>up to {policy.maxWritesPerTool} writes per tool</Badge> : null}
            </div>
            <p className="text-sm text-slate-700" data-testid="reason">
              <Inert text={policy.reason} />
            </p>
          </li>
        ))}
      </ol>
      <details className="rounded-lg border border-slate-200">
        <summary className="cursor-pointer px-4 py-2 text-sm font-medium text-slate-700">Policy text (Cedar), as published</summary>
        <pre
          role="region"
          aria-label={`Published policy v${view.version}`}
          tabIndex={0}
          className="border-t border-slate-200 bg-slate-50 px-4 py-3 font-mono text-xs leading-5 whitespace-pre-wrap text-slate-800 wrap-anywhere"
        >
          <Inert text={view.text} />
        </pre>
      </details>
    </div>
  );
}
