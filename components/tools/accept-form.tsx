"use client";
/**
 * Accepts a quarantined tool as shown: the first admin asks, a second admin (shown who asked)
 * confirms; the server refuses if it changed again in the meantime, or if the asker confirms.
 */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import type { AcceptState } from "@/app/(console)/tools/actions";

type Props = {
  server: string;
  tool: string;
  schemaHash: string;
  /** The admin who asked to accept this definition, if one did. */
  requestedBy: string | null;
  action: (state: AcceptState, form: FormData) => Promise<AcceptState>;
};

export function AcceptToolForm({ server, tool, schemaHash, requestedBy, action }: Props) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="mt-3 flex flex-wrap items-center gap-3">
      <input type="hidden" name="server" value={server} />
      <input type="hidden" name="tool" value={tool} />
      <input type="hidden" name="schemaHash" value={schemaHash} />
      {requestedBy ? <p className="text-sm text-slate-700">{requestedBy} asked to accept this definition.</p> : null}
      <Button type="submit" disabled={pending}>
        {requestedBy ? "Confirm acceptance" : "Ask to accept this definition"}
      </Button>
      {state && !state.ok ? (
        <p role="alert" className="text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
    </form>
  );
}
