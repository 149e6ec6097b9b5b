"use client";
/** Create an agent (its token is shown once, here) and revoke one. The server checks everything. */
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import type { CreateAgentState, RevokeAgentState } from "@/app/(console)/agents/actions";

const SCOPES = [
  { value: "runs:submit", label: "submit runs" },
  { value: "runs:read", label: "read its runs" },
  { value: "tools:read", label: "search tools" },
  { value: "inputs:read", label: "list inputs" },
];

export function CreateAgentForm({ action, defaultOwner }: { action: (s: CreateAgentState, f: FormData) => Promise<CreateAgentState>; defaultOwner: string }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="space-y-3">
      <div className="grid gap-3 sm:grid-cols-2">
        <label className="block text-sm font-medium text-slate-700">
          Name
          <input name="name" required pattern="[a-z0-9][a-z0-9\-]{0,62}" className="mt-1 w-full rounded-md border border-slate-300 px-3 py-2 font-normal" />
        </label>
        <label className="block text-sm font-medium text-slate-700">
          Owner (email)
          <input
            name="ownerEmail"
            type="email"
            required
            defaultValue={defaultOwner}
            className="mt-1 w-full rounded-md border border-slate-300 px-3 py-2 font-normal"
          />
        </label>
      </div>
      <fieldset>
        <legend className="text-sm font-medium text-slate-700">Scopes</legend>
        <div className="mt-1 flex flex-wrap gap-4 text-sm">
          {SCOPES.map((scope) => (
            <label key={scope.value} className="inline-flex items-center gap-2">
              <input type="checkbox" name="scopes" value={scope.value} defaultChecked /> {scope.label}
            </label>
          ))}
        </div>
      </fieldset>
      <Button type="submit" disabled={pending}>
        Create agent
      </Button>
      {state && !state.ok ? (
        <p role="alert" className="text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
      {state && state.ok ? (
        <div role="status" className="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm">
          <p className="font-medium">Token for {state.data.name} — copy it now, it is not shown again:</p>
          <code data-testid="new-agent-token" className="mt-1 block break-all font-mono">
            {state.data.token}
          </code>
        </div>
      ) : null}
    </form>
  );
}

export function RevokeAgentButton({ name, action }: { name: string; action: (s: RevokeAgentState, f: FormData) => Promise<RevokeAgentState> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form
      action={formAction}
      onSubmit={(event) => {
        if (!window.confirm(`Revoke ${name}? Its tokens stop working at once.`)) event.preventDefault();
      }}
    >
      <input type="hidden" name="name" value={name} />
      <Button type="submit" variant="ghost" disabled={pending} className="text-red-800">
        Revoke
      </Button>
      {state && !state.ok ? (
        <span role="alert" className="text-xs text-red-800">
          {state.error.message}
        </span>
      ) : null}
    </form>
  );
}
