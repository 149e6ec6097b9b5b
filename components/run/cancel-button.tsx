"use client";
/** Cancels a run that has not finished; the server checks the scope and the state again. */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import type { CancelState } from "@/app/(console)/runs/[id]/actions";

type Props = { runId: string; canCancel: boolean; action: (state: CancelState, form: FormData) => Promise<CancelState> };

/** Stays mounted after the run stops (canCancel false) so the outcome message remains visible. */
export function CancelButton({ runId, canCancel, action }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  if (!canCancel && !state) return null;
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-3">
      <input type="hidden" name="runId" value={runId} />
      {canCancel ? (
        <Button type="submit" variant="ghost" disabled={pending} className="border border-red-300 text-red-800 hover:bg-red-50">
          Cancel run
        </Button>
      ) : null}
      {state && !state.ok ? (
        <p role="alert" className="text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
      {state && state.ok ? (
        <p role="status" className="text-sm text-slate-700">
          {state.data.status === "cancelled" ? "Cancelled." : "Cancel requested; the sandbox is being stopped."}
        </p>
      ) : null}
    </form>
  );
}
