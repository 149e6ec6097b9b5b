"use client";
/**
 * Overrides of a tool's facts with four eyes: ProposeOverrideForm lets an admin set each hint and
 * the data class (or keep the upstream's claim and the config's class); it changes nothing until a
 * different admin confirms the proposal with ConfirmOverrideForm. The server refuses the proposer's
 * own confirmation and a proposal replaced or decided meanwhile.
 */
import { useActionState, useId } from "react";
import { Button } from "@/components/ui/primitives";
import type { OverrideState } from "@/app/(console)/tools/actions";

type Action = (state: OverrideState, form: FormData) => Promise<OverrideState>;

const HINTS = [
  { name: "readOnlyHint", label: "Read-only" },
  { name: "destructiveHint", label: "Destructive" },
  { name: "idempotentHint", label: "Idempotent" },
  { name: "openWorldHint", label: "Open world" },
] as const;

const field = "mt-1 w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm";
const labelClass = "block text-xs font-medium text-slate-600";

function Outcome({ state, done }: { state: OverrideState; done: string }) {
  if (!state) return null;
  return state.ok ? (
    <p role="status" className="text-sm text-teal-800">
      {done}
    </p>
  ) : (
    <p role="alert" className="text-sm text-red-800">
      {state.error.message}
    </p>
  );
}

export function ProposeOverrideForm({
  server,
  tools,
  dataClasses,
  action,
}: {
  server: string;
  tools: string[];
  dataClasses: readonly string[];
  action: Action;
}) {
  const [state, formAction, pending] = useActionState(action, null);
  const id = useId();
  return (
    <form action={formAction} aria-label={`Propose an override for ${server}`} className="grid gap-3 sm:grid-cols-3 lg:grid-cols-7">
      <input type="hidden" name="server" value={server} />
      <div>
        <label htmlFor={`${id}-tool`} className={labelClass}>
          Tool
        </label>
        <select id={`${id}-tool`} name="tool" className={field}>
          {tools.map((tool) => (
            <option key={tool} value={tool}>
              {tool}
            </option>
          ))}
        </select>
      </div>
      {HINTS.map((hint) => (
        <div key={hint.name}>
          <label htmlFor={`${id}-${hint.name}`} className={labelClass}>
            {hint.label}
          </label>
          <select id={`${id}-${hint.name}`} name={hint.name} defaultValue="claim" className={field}>
            <option value="claim">as the upstream says</option>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        </div>
      ))}
      <div>
        <label htmlFor={`${id}-dataClass`} className={labelClass}>
          Data class
        </label>
        <select id={`${id}-dataClass`} name="dataClass" defaultValue="config" className={field}>
          <option value="config">as the config says</option>
          {dataClasses.map((dataClass) => (
            <option key={dataClass} value={dataClass}>
              {dataClass}
            </option>
          ))}
        </select>
      </div>
      <div className="flex items-end">
        <Button type="submit" disabled={pending}>
          Propose override
        </Button>
      </div>
      <div className="sm:col-span-3 lg:col-span-7">
        <Outcome state={state} done="Proposed; it is in force once a second admin confirms it." />
      </div>
    </form>
  );
}

export function ConfirmOverrideForm({ server, tool, overrideId, action }: { server: string; tool: string; overrideId: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="mt-3 flex flex-wrap items-center gap-3">
      <input type="hidden" name="server" value={server} />
      <input type="hidden" name="tool" value={tool} />
      <input type="hidden" name="overrideId" value={overrideId} />
      <Button type="submit" disabled={pending}>
        Confirm override
      </Button>
      <Outcome state={state} done="Confirmed; policy relies on it from now on." />
    </form>
  );
}
