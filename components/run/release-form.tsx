"use client";
/**
 * A check_failed run's withheld result: who released it so far, and — for a reviewer the server
 * says may — a form to release it with a reason. The digest of the result on the page travels back
 * as a hidden field and the server compares it with the row (lib/review/release.ts), which also
 * enforces scope, separation of duties and one release per person.
 */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { Time } from "@/components/ui/time";
import type { RunDetail } from "@/lib/review/dto";
import type { ReleaseState } from "@/app/(console)/runs/[id]/actions";

type Props = {
  runId: string;
  release: NonNullable<RunDetail["release"]>;
  action: (state: ReleaseState, form: FormData) => Promise<ReleaseState>;
};

export function ReleaseForm({ runId, release, action }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <div className="space-y-3" data-testid="release-panel">
      <p className="text-sm text-slate-800">
        {release.releasedAt ? (
          <>
            Released to the agent <Time iso={release.releasedAt} />.
          </>
        ) : (
          <>
            A check failed, so the result is withheld from the agent. It is released when {release.required} reviewer
            {release.required === 1 ? "" : "s"} release{release.required === 1 ? "s" : ""} it, each with a reason.
          </>
        )}
      </p>
      {release.releases.length > 0 ? (
        <ul className="space-y-1 text-sm">
          {release.releases.map((r) => (
            <li key={r.email}>
              <strong>{r.email}</strong> released it <Time iso={r.at} />: <Inert text={r.comment} />
            </li>
          ))}
        </ul>
      ) : null}
      {release.canRelease && !(state && state.ok) ? (
        <form action={formAction} className="space-y-2" aria-label="Release the result">
          <input type="hidden" name="runId" value={runId} />
          <input type="hidden" name="resultDigest" value={release.resultDigest} />
          <label htmlFor="release-comment" className="block text-sm font-medium text-slate-700">
            Why can the agent use this result although a check failed? <span className="font-normal text-slate-500">(required)</span>
          </label>
          <textarea
            id="release-comment"
            name="comment"
            rows={2}
            maxLength={5000}
            required
            className="w-full rounded-md border border-slate-300 px-3 py-2 text-sm"
          />
          <Button type="submit" disabled={pending}>
            Release the result
          </Button>
        </form>
      ) : !release.releasedAt && release.cannotReleaseBecause ? (
        <p className="rounded-md bg-slate-50 px-3 py-2 text-sm text-slate-700" data-testid="cannot-release">
          {release.cannotReleaseBecause}
        </p>
      ) : null}
      {state && !state.ok ? (
        <p role="alert" data-testid="release-error" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
      {state && state.ok ? (
        <p role="status" data-testid="release-result" className="rounded-md bg-emerald-50 px-3 py-2 text-sm text-emerald-900">
          {state.data.released
            ? "Released: the agent gets the result now."
            : `Your release is recorded (${state.data.releases.received}/${state.data.releases.required}).`}
        </p>
      ) : null}
    </div>
  );
}
