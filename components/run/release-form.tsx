"use client";
/**
 * A result withheld from its agent — because a check failed, or because a release policy holds it
 * — with who released it so far and, for a reviewer the server says may, a form to release it (or,
 * for a held result, to withhold it for good), always with a reason. The digest of the result on
 * the page travels back as a hidden field and the server compares it with the row
 * (lib/review/release.ts), which also enforces scope, role, separation of duties, the deadline and
 * one release per person.
 */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { Time } from "@/components/ui/time";
import type { RunDetail } from "@/lib/review/dto";
import type { ReleaseState, WithholdState } from "@/app/(console)/runs/[id]/actions";

type Props = {
  runId: string;
  release: NonNullable<RunDetail["release"]>;
  action: (state: ReleaseState, form: FormData) => Promise<ReleaseState>;
  withhold: (state: WithholdState, form: FormData) => Promise<WithholdState>;
};

function Summary({ release }: { release: Props["release"] }) {
  const reviewers = `${release.required} reviewer${release.required === 1 ? "" : "s"} release${release.required === 1 ? "s" : ""} it, each with a reason`;
  if (release.releasedAt) {
    return (
      <>
        Released to the agent <Time iso={release.releasedAt} />.
      </>
    );
  }
  if (release.withheldBecause) return <Inert text={release.withheldBecause} />;
  if (release.kind === "check_failed") return <>A check failed, so the result is withheld from the agent. It is released when {reviewers}.</>;
  if (release.status === "expired") return <>Nobody released the result before the hold expired; the agent does not get it.</>;
  return (
    <>
      The script ran, and policy holds its result before the agent sees it. It is released when {reviewers}
      {release.expiresAt ? (
        <>
          , until <Time iso={release.expiresAt} />
        </>
      ) : null}
      ; one reviewer can withhold it instead.
    </>
  );
}

export function ReleaseForm({ runId, release, action, withhold }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  const [withheld, withholdAction, withholding] = useActionState(withhold, null);
  const done = (state && state.ok) || (withheld && withheld.ok);
  const failure = done ? null : state && !state.ok ? state.error.message : withheld && !withheld.ok ? withheld.error.message : null;
  return (
    <div className="space-y-3" data-testid="release-panel">
      <p className="text-sm text-slate-800">
        <Summary release={release} />
      </p>
      {release.heldBecause.length > 0 ? (
        <ul className="list-disc space-y-1 pl-5 text-sm text-slate-700" aria-label="Why policy holds the result">
          {release.heldBecause.map((why) => (
            <li key={why}>
              <Inert text={why} />
            </li>
          ))}
        </ul>
      ) : null}
      {release.releases.length > 0 ? (
        <ul className="space-y-1 text-sm">
          {release.releases.map((r) => (
            <li key={r.email}>
              <strong>{r.email}</strong> released it <Time iso={r.at} />: <Inert text={r.comment} />
            </li>
          ))}
        </ul>
      ) : null}
      {release.canRelease && !done ? (
        <form action={formAction} className="space-y-2" aria-label="Release the result">
          <input type="hidden" name="runId" value={runId} />
          <input type="hidden" name="resultDigest" value={release.resultDigest} />
          <label htmlFor="release-comment" className="block text-sm font-medium text-slate-700">
            {release.kind === "check_failed"
              ? "Why can the agent use this result although a check failed?"
              : "Why may the agent use this result (or, to withhold it, why not)?"}{" "}
            <span className="font-normal text-slate-500">(required)</span>
          </label>
          <textarea
            id="release-comment"
            name="comment"
            rows={2}
            maxLength={5000}
            required
            className="w-full rounded-md border border-slate-300 px-3 py-2 text-sm"
          />
          <div className="flex flex-wrap gap-3">
            <Button type="submit" disabled={pending || withholding}>
              Release the result
            </Button>
            {release.canWithhold ? (
              <Button type="submit" variant="danger" formAction={withholdAction} disabled={pending || withholding}>
                Withhold the result
              </Button>
            ) : null}
          </div>
        </form>
      ) : !release.releasedAt && !release.withheldBecause && release.cannotReleaseBecause ? (
        <p className="rounded-md bg-slate-50 px-3 py-2 text-sm text-slate-700" data-testid="cannot-release">
          {release.cannotReleaseBecause}
        </p>
      ) : null}
      {failure ? (
        <p role="alert" data-testid="release-error" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">
          {failure}
        </p>
      ) : null}
      {state && state.ok ? (
        <p role="status" data-testid="release-result" className="rounded-md bg-emerald-50 px-3 py-2 text-sm text-emerald-900">
          {state.data.released
            ? "Released: the agent gets the result now."
            : `Your release is recorded (${state.data.releases.received}/${state.data.releases.required}).`}
        </p>
      ) : null}
      {withheld && withheld.ok ? (
        <p role="status" data-testid="release-result" className="rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900">
          Withheld: the agent is told the result is withheld, with your reason.
        </p>
      ) : null}
    </div>
  );
}
