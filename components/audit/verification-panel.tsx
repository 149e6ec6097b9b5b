"use client";
/**
 * The last verification of the chain (time, who, result) and a button that runs a new one. The
 * server action checks the scope, verifies the whole chain, signs a checkpoint when it holds, and
 * records the verification as an audit event; the panel only shows what it returns.
 */
import { useActionState } from "react";
import { Badge, Button, Card } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import type { LastVerification } from "@/lib/audit/presenter";

export type VerifyActionState = { error: string | null; last: LastVerification | null };

type Props = {
  last: LastVerification | null;
  action: (state: VerifyActionState, form: FormData) => Promise<VerifyActionState>;
};

export function VerificationPanel({ last, action }: Props) {
  const [state, formAction, pending] = useActionState(action, { error: null, last });
  const shown = state.last;
  return (
    <Card title="Integrity" className="mb-6">
      <div className="flex flex-wrap items-center justify-between gap-4" data-testid="audit-verification">
        <div className="text-sm">
          {shown ? (
            <>
              <p>
                <Badge tone={shown.ok ? "good" : "bad"}>{shown.ok ? "Chain intact" : "Chain broken"}</Badge>{" "}
                <span className="text-slate-600">
                  last verified <Time iso={shown.at} /> by {shown.actor}: {shown.eventsChecked.toLocaleString("en")} events in{" "}
                  {(shown.durationMs / 1000).toFixed(1)} s{shown.headId ? `, head #${shown.headId}` : ""}
                </span>
              </p>
              {shown.broken ? (
                <p className="mt-1 text-red-800" role="alert">
                  First broken: {shown.broken.eventId ? `event #${shown.broken.eventId}` : "no single event"} ({shown.broken.reason}) — {shown.broken.detail}
                </p>
              ) : null}
            </>
          ) : (
            <p className="text-slate-600">The chain has not been verified yet.</p>
          )}
          {state.error ? (
            <p className="mt-1 text-red-800" role="alert">
              {state.error}
            </p>
          ) : null}
        </div>
        <form action={formAction}>
          <Button type="submit" disabled={pending}>
            {pending ? "Verifying…" : "Verify now"}
          </Button>
        </form>
      </div>
    </Card>
  );
}
