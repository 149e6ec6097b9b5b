"use client";
/** Approves another admin's proposed policy version, which publishes it; the server refuses the proposer. */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import type { ApproveState } from "@/app/(console)/policies/actions";

type Props = { version: number; action: (state: ApproveState, form: FormData) => Promise<ApproveState> };

export function ApprovePolicyForm({ version, action }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="mt-3 flex flex-wrap items-center gap-3">
      <input type="hidden" name="version" value={version} />
      <Button type="submit" disabled={pending}>
        Approve and publish v{version}
      </Button>
      {state && !state.ok ? (
        <p role="alert" className="text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
    </form>
  );
}
