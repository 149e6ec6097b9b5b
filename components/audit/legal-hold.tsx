"use client";
/**
 * Legal holds on the run's audit page: a "held" badge with each hold that keeps the run (its own
 * and its agent's: reason, who, when) and a release form per hold; a form to place a new one on
 * the run or its agent, with a reason. The server actions check the scope and audit each change.
 */
import { useActionState } from "react";
import { Inert } from "@/components/ui/inert";
import { Badge, Button, Card } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import type { ActionResult } from "@/lib/auth/user-action";

export type HoldActionState = ActionResult<{ done: "placed" | "released" }> | null;

export type HoldView = { id: string; on: "run" | "agent"; reason: string; placedBy: string; placedAt: string };

type Action = (state: HoldActionState, form: FormData) => Promise<HoldActionState>;

function Outcome({ state }: { state: HoldActionState }) {
  if (!state || state.ok) return null;
  return (
    <p className="text-sm text-red-800" role="alert">
      {state.error.message}
    </p>
  );
}

function Release({ runId, hold, action }: { runId: string; hold: HoldView; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2">
      <input type="hidden" name="runId" value={runId} />
      <input type="hidden" name="holdId" value={hold.id} />
      <input
        name="reason"
        required
        maxLength={2000}
        placeholder="Why release it"
        aria-label="Reason for release"
        className="rounded border px-2 py-1 text-sm"
      />
      <Button type="submit" disabled={pending}>
        Release
      </Button>
      <Outcome state={state} />
    </form>
  );
}

export function LegalHoldPanel({ runId, holds, place, release }: { runId: string; holds: HoldView[]; place: Action; release: Action }) {
  const [state, formAction, pending] = useActionState(place, null);
  return (
    <Card title="Legal hold" className="mb-6">
      <div className="space-y-3 text-sm" data-testid="legal-hold">
        {holds.length ? (
          <ul className="space-y-2">
            {holds.map((hold) => (
              <li key={hold.id} className="space-y-1">
                <p>
                  <Badge tone="bad">held</Badge> on the {hold.on}: <Inert text={hold.reason} /> — {hold.placedBy}, <Time iso={hold.placedAt} />
                </p>
                <Release runId={runId} hold={hold} action={release} />
              </li>
            ))}
          </ul>
        ) : (
          <p className="text-slate-600">No hold: retention purges this run&apos;s payloads when their window ends.</p>
        )}
        <form action={formAction} className="flex flex-wrap items-center gap-2">
          <input type="hidden" name="runId" value={runId} />
          <select name="on" aria-label="Hold on" className="rounded border px-2 py-1 text-sm" defaultValue="run">
            <option value="run">this run</option>
            <option value="agent">every run of its agent</option>
          </select>
          <input
            name="reason"
            required
            maxLength={2000}
            placeholder="Reason (case, request)"
            aria-label="Reason for the hold"
            className="min-w-64 rounded border px-2 py-1 text-sm"
          />
          <Button type="submit" disabled={pending}>
            Place hold
          </Button>
          <Outcome state={state} />
        </form>
      </div>
    </Card>
  );
}
