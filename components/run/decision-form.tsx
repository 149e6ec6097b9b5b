"use client";
/**
 * Approve / reject / request changes. The facts the reviewer is looking at (code hash, capability
 * set, inputs digest, policy version) travel back as hidden fields and the server compares them
 * with the run; the server also enforces scope, separation of duties, quorum and one vote per
 * person — this form only offers what the page already knows the viewer may do.
 *
 * A half-typed comment is kept in this tab's sessionStorage, keyed by run and code hash, so it
 * survives a reload (and a refused submission, after which React resets the form); it is removed
 * once a decision is accepted.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useActionState, useEffect, useRef } from "react";
import { QUEUE_COUNT_KEY } from "@/components/queue/queue-badge";
import { Button } from "@/components/ui/primitives";
import type { RunDetail } from "@/lib/review/dto";
import type { DecisionState } from "@/app/(console)/runs/[id]/actions";

type Props = {
  runId: string;
  /** Offer the form (the page knows the viewer may decide); the panel stays mounted either way so the outcome stays visible. */
  canDecide: boolean;
  /** Why the form is not offered, when the run still waits for review. */
  cannotDecideBecause: string | null;
  binding: RunDetail["binding"];
  action: (state: DecisionState, form: FormData) => Promise<DecisionState>;
};

const VERDICT_WORD = { approve: "approved", reject: "rejected", request_changes: "requested changes" } as const;

function readDraft(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

function writeDraft(key: string, text: string): void {
  try {
    if (text) sessionStorage.setItem(key, text);
    else sessionStorage.removeItem(key);
  } catch {
    // Storage is unavailable (disabled, full): the draft just does not survive a reload.
  }
}

export function DecisionForm({ runId, canDecide, cannotDecideBecause, binding, action }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  const queryClient = useQueryClient();
  const comment = useRef<HTMLTextAreaElement>(null);
  const draftKey = `airlock.review-comment.${runId}.${binding.codeSha256}`;
  useEffect(() => {
    const saved = readDraft(draftKey);
    if (saved && comment.current && !comment.current.value) comment.current.value = saved;
  }, [draftKey]);
  useEffect(() => {
    if (!state) return;
    if (state.ok) {
      writeDraft(draftKey, "");
      void queryClient.invalidateQueries({ queryKey: QUEUE_COUNT_KEY });
    } else if (comment.current) {
      comment.current.value = readDraft(draftKey) ?? "";
    }
  }, [state, draftKey, queryClient]);
  const outcome =
    state && state.ok ? (
      <p role="status" data-testid="decision-result" className="rounded-md bg-emerald-50 px-3 py-2 text-sm text-emerald-900">
        You {VERDICT_WORD[state.data.verdict]} ({state.data.approvals.received}/{state.data.approvals.required} approvals):{" "}
        {state.data.status === "pending_review"
          ? "the run waits for more approvals."
          : `the run became ${state.data.status.replaceAll("_", " ")}; its status at the top of the page follows it from here.`}
      </p>
    ) : null;
  const failure =
    state && !state.ok ? (
      <p role="alert" data-testid="decision-error" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">
        {state.error.message}
      </p>
    ) : null;
  if (!canDecide) {
    return (
      <div className="space-y-3">
        {outcome}
        {failure}
        {cannotDecideBecause ? (
          <p className="rounded-md bg-slate-50 px-3 py-2 text-sm text-slate-700" data-testid="cannot-decide">
            {cannotDecideBecause}
          </p>
        ) : null}
      </div>
    );
  }
  return (
    <form action={formAction} className="space-y-3" aria-label="Decision">
      <input type="hidden" name="runId" value={runId} />
      <input type="hidden" name="codeSha256" value={binding.codeSha256} />
      <input type="hidden" name="capabilitySet" value={JSON.stringify(binding.capabilitySet)} />
      <input type="hidden" name="inputsDigest" value={binding.inputsDigest} />
      <input type="hidden" name="policyVersionId" value={binding.policyVersionId ?? ""} />
      <input type="hidden" name="planDigest" value={binding.planDigest ?? ""} />
      <div>
        <label htmlFor="decision-comment" className="block text-sm font-medium text-slate-700">
          Comment <span className="font-normal text-slate-500">(required to reject or request changes; the agent reads it)</span>
        </label>
        <textarea
          ref={comment}
          id="decision-comment"
          name="comment"
          rows={3}
          maxLength={5000}
          onInput={(event) => writeDraft(draftKey, event.currentTarget.value)}
          className="mt-1 w-full rounded-md border border-slate-300 px-3 py-2 text-sm"
        />
      </div>
      <div className="flex flex-wrap gap-2">
        <Button type="submit" name="verdict" value="approve" disabled={pending}>
          Approve
        </Button>
        <Button type="submit" name="verdict" value="request_changes" variant="secondary" disabled={pending}>
          Request changes
        </Button>
        {/* Set apart, so it is not clicked in place of its neighbour. */}
        <Button type="submit" name="verdict" value="reject" variant="danger" disabled={pending} className="sm:ml-auto">
          Reject
        </Button>
      </div>
      <p className="text-xs text-slate-500">
        Your decision covers code sha256 <code>{binding.codeSha256.slice(0, 12)}…</code>, {binding.capabilitySet.length} tool
        {binding.capabilitySet.length === 1 ? "" : "s"}, inputs digest <code>{binding.inputsDigest.slice(0, 12)}…</code>
        {binding.planDigest ? (
          <>
            , the plan (<code>{binding.planDigest.slice(0, 12)}…</code>)
          </>
        ) : null}{" "}
        and this policy version — nothing more.
      </p>
      {failure}
      {outcome}
    </form>
  );
}
