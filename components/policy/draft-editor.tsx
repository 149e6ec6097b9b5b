"use client";
/** Cedar draft editor: check (validation + replay against recent proposals), save, propose (a second admin approves). */
import { useActionState } from "react";
import { Inert } from "@/components/ui/inert";
import { Button } from "@/components/ui/primitives";
import type { DraftState } from "@/app/(console)/policies/actions";
import { cutAt } from "@/lib/untrusted/invisible";

function label(d: { decision: string | null; approvalsRequired: number }) {
  return d.decision === "escalate" ? `escalate (${d.approvalsRequired})` : (d.decision ?? "—");
}

export function DraftEditor({ initialText, action }: { initialText: string; action: (s: DraftState, f: FormData) => Promise<DraftState> }) {
  const [state, formAction, pending] = useActionState(action, null);
  const data = state?.ok ? state.data : null;
  return (
    <form action={formAction} className="space-y-3">
      <label htmlFor="policy-text" className="block text-sm font-medium text-slate-700">
        Draft (Cedar)
      </label>
      <textarea
        id="policy-text"
        name="text"
        defaultValue={initialText}
        spellCheck={false}
        rows={24}
        className="w-full rounded-md border border-slate-300 p-3 font-mono text-xs leading-5"
      />
      <div className="flex flex-wrap gap-2">
        <Button type="submit" name="intent" value="check" disabled={pending}>
          Check and replay
        </Button>
        <Button type="submit" name="intent" value="save" variant="ghost" disabled={pending} className="border border-slate-300">
          Save draft
        </Button>
        <Button type="submit" name="intent" value="propose" variant="ghost" disabled={pending} className="border border-teal-700 text-teal-800">
          Propose
        </Button>
      </div>
      {state && !state.ok ? (
        <p role="alert" className="text-sm text-red-800">
          {state.error.message}
        </p>
      ) : null}
      {data?.kind === "saved" || data?.kind === "proposed" ? (
        <p role="status" className="text-sm text-emerald-800">
          {data.kind === "proposed"
            ? `Proposed as version ${data.version}; it is published when a second admin approves it.`
            : `Saved as draft version ${data.version}.`}
        </p>
      ) : null}
      {data?.kind === "checked" ? (
        <div role="status" className="space-y-3 text-sm">
          {data.errors.length === 0 ? <p className="text-emerald-800">The draft is valid.</p> : null}
          {[...data.errors, ...data.warnings].map((p, i) => (
            <p key={i} className={i < data.errors.length ? "text-red-800" : "text-amber-800"}>
              line {p.line}, column {p.column}: <Inert text={p.message} />
            </p>
          ))}
          {data.replay ? (
            <div>
              <p className="font-medium">
                Replayed against {data.replay.rows.length} recent proposal(s): {data.replay.changed} would be decided differently.
              </p>
              <ul className="mt-2 space-y-1">
                {data.replay.rows
                  .filter((row) => row.changed)
                  .map((row) => (
                    <li key={row.runId} className="font-mono text-xs">
                      <a className="underline" href={`/runs/${row.runId}`}>
                        <Inert text={row.agent} />: <Inert text={cutAt(row.purpose, 60)} />
                      </a>{" "}
                      {label(row.before)} → {label(row.after)}
                    </li>
                  ))}
              </ul>
            </div>
          ) : null}
        </div>
      ) : null}
    </form>
  );
}
