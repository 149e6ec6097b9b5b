"use client";
/**
 * The skill pages' forms, each posting to one server action of ./actions.ts and showing its typed
 * outcome (the service's message on a refusal, role="alert"). The fields are controlled, so a
 * refused submission keeps what was typed. These forms only offer what the page knows the viewer
 * may do; the actions and services check the scope, four eyes and the content digest again.
 * - DraftSkillForm (admins): name, description, which literals become arguments and their names,
 *   the schemas (sent only when edited, so unchanged ones follow the bound arguments).
 * - ReplayForm (admins, a draft): runs the replay tests.
 * - ReviewSkillForm (reviewers, a draft): approve or reject, bound to the content digest shown.
 * - StandingButton (admins): confirms or revokes a standing approval.
 * - ProposeStandingForm (admins, a published version): proposes a standing approval.
 */
import { useActionState, useId, useState } from "react";
import { Inert } from "@/components/ui/inert";
import { Button } from "@/components/ui/primitives";
import type { ActionResult } from "@/lib/auth/user-action";
import type { SkillInput } from "@/lib/skills/draft";
import type { DraftSkillState, ReplayState, ReviewSkillState, StandingState } from "./actions";

type Action<S> = (state: S, form: FormData) => Promise<S>;

const field = "mt-1 w-full rounded-md border border-slate-300 px-3 py-2 text-sm";
const code = "mt-1 w-full rounded-md border border-slate-300 p-3 font-mono text-xs leading-5";
const labelClass = "block text-sm font-medium text-slate-700";

function Failure({ state }: { state: ActionResult<unknown> | null }) {
  if (!state || state.ok) return null;
  return (
    <p role="alert" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">
      <Inert text={state.error.message} />
    </p>
  );
}

function Done({ state, children }: { state: ActionResult<unknown> | null; children: string }) {
  if (!state?.ok) return null;
  return (
    <p role="status" className="text-sm text-emerald-800">
      {children}
    </p>
  );
}

export function DraftSkillForm({
  fingerprint,
  name: initialName,
  description: initialDescription,
  inputs,
  inputSchema: initialInputSchema,
  outputSchema: initialOutputSchema,
  action,
}: {
  fingerprint: string;
  name: string;
  description: string;
  inputs: SkillInput[];
  inputSchema: string;
  outputSchema: string;
  action: Action<DraftSkillState>;
}) {
  const [state, formAction, pending] = useActionState(action, null);
  const id = useId();
  const [name, setName] = useState(initialName);
  const [description, setDescription] = useState(initialDescription);
  const [bound, setBound] = useState<Record<number, boolean>>(() => Object.fromEntries(inputs.map((input) => [input.hole, true])));
  const [argNames, setArgNames] = useState<Record<number, string>>(() => Object.fromEntries(inputs.map((input) => [input.hole, input.name])));
  const [inputSchema, setInputSchema] = useState(initialInputSchema);
  const [outputSchema, setOutputSchema] = useState(initialOutputSchema);
  return (
    <form action={formAction} className="space-y-4" aria-label="Skill draft">
      <input type="hidden" name="fingerprint" value={fingerprint} />
      <input type="hidden" name="inputSchemaOriginal" value={initialInputSchema} />
      <input type="hidden" name="outputSchemaOriginal" value={initialOutputSchema} />
      <div>
        <label htmlFor={`${id}-name`} className={labelClass}>
          Name
        </label>
        <input
          id={`${id}-name`}
          name="name"
          value={name}
          onChange={(event) => setName(event.target.value)}
          maxLength={64}
          spellCheck={false}
          aria-describedby={`${id}-name-hint`}
          className={`${field} font-mono`}
        />
        <p id={`${id}-name-hint`} className="mt-1 text-xs text-slate-500">
          lowerCamelCase letters and digits: how scripts call it (skills.&lt;name&gt;) and agents find it. A name already used gets its next version.
        </p>
      </div>
      <div>
        <label htmlFor={`${id}-description`} className={labelClass}>
          Description
        </label>
        <textarea
          id={`${id}-description`}
          name="description"
          value={description}
          onChange={(event) => setDescription(event.target.value)}
          rows={2}
          maxLength={500}
          className={field}
        />
      </div>
      <fieldset className="space-y-2">
        <legend className={labelClass}>Arguments</legend>
        {inputs.length === 0 ? (
          <p className="text-sm text-slate-600">No literal varies between the pattern&apos;s runs: the skill takes no arguments.</p>
        ) : (
          <ul className="space-y-2">
            {inputs.map((input) => {
              const hole = input.hole + 1;
              return (
                <li key={input.hole} className="flex flex-wrap items-start gap-x-4 gap-y-1 rounded-md border border-slate-200 px-3 py-2 text-sm">
                  <label className="flex items-center gap-2 pt-5 font-medium">
                    <input
                      type="checkbox"
                      name="bind"
                      value={input.hole}
                      checked={bound[input.hole] ?? false}
                      onChange={(event) => setBound((now) => ({ ...now, [input.hole]: event.target.checked }))}
                    />
                    Bind #{hole}
                  </label>
                  <div className="min-w-48">
                    <label htmlFor={`${id}-arg-${input.hole}`} className="block text-xs text-slate-600">
                      Argument name for #{hole}
                    </label>
                    <input
                      id={`${id}-arg-${input.hole}`}
                      name={`argName-${input.hole}`}
                      value={argNames[input.hole] ?? ""}
                      onChange={(event) => setArgNames((now) => ({ ...now, [input.hole]: event.target.value }))}
                      disabled={!bound[input.hole]}
                      maxLength={64}
                      spellCheck={false}
                      className="w-full rounded-md border border-slate-300 px-2 py-1.5 font-mono text-sm"
                    />
                  </div>
                  <p className="basis-full text-xs text-slate-600">
                    {input.type}, seen: <Inert text={input.values.map((value) => JSON.stringify(value)).join(", ")} />
                  </p>
                </li>
              );
            })}
          </ul>
        )}
        <p className="text-xs text-slate-500">
          A literal left unbound keeps the value of the pattern&apos;s newest run; only runs with that value become tests.
        </p>
      </fieldset>
      <div>
        <label htmlFor={`${id}-input-schema`} className={labelClass}>
          Input schema
        </label>
        <textarea
          id={`${id}-input-schema`}
          name="inputSchema"
          value={inputSchema}
          onChange={(event) => setInputSchema(event.target.value)}
          rows={10}
          spellCheck={false}
          aria-describedby={`${id}-input-schema-hint`}
          className={code}
        />
        <p id={`${id}-input-schema-hint`} className="mt-1 text-xs text-slate-500">
          Left as proposed, it follows the arguments you bind. Edited, it must stay a closed object schema naming exactly the bound arguments, all required.
        </p>
      </div>
      <div>
        <label htmlFor={`${id}-output-schema`} className={labelClass}>
          Output schema
        </label>
        <textarea
          id={`${id}-output-schema`}
          name="outputSchema"
          value={outputSchema}
          onChange={(event) => setOutputSchema(event.target.value)}
          rows={10}
          spellCheck={false}
          aria-describedby={`${id}-output-schema-hint`}
          className={code}
        />
        <p id={`${id}-output-schema-hint`} className="mt-1 text-xs text-slate-500">
          Inferred from the results of past runs; every replayed result must fit it.
        </p>
      </div>
      <Button type="submit" disabled={pending}>
        Draft skill
      </Button>
      <Failure state={state} />
    </form>
  );
}

export function ReplayForm({ versionId, action }: { versionId: string; action: Action<ReplayState> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="mt-3 space-y-2">
      <input type="hidden" name="versionId" value={versionId} />
      <Button type="submit" variant="secondary" disabled={pending}>
        Run replay tests
      </Button>
      {pending ? (
        <p role="status" className="text-sm text-slate-600">
          Replaying the tests in the sandbox…
        </p>
      ) : null}
      <Failure state={state} />
    </form>
  );
}

export function ReviewSkillForm({ versionId, contentDigest, action }: { versionId: string; contentDigest: string; action: Action<ReviewSkillState> }) {
  const [comment, setComment] = useState("");
  const [state, formAction, pending] = useActionState(async (previous: ReviewSkillState, form: FormData) => {
    const result = await action(previous, form);
    if (result?.ok) setComment("");
    return result;
  }, null);
  const id = useId();
  return (
    <form action={formAction} className="space-y-3" aria-label="Skill review">
      <input type="hidden" name="versionId" value={versionId} />
      <input type="hidden" name="contentDigest" value={contentDigest} />
      <div>
        <label htmlFor={`${id}-comment`} className={labelClass}>
          Comment <span className="font-normal text-slate-500">(optional)</span>
        </label>
        <textarea
          id={`${id}-comment`}
          name="comment"
          value={comment}
          onChange={(event) => setComment(event.target.value)}
          rows={3}
          maxLength={2_000}
          className={field}
        />
      </div>
      <div className="flex flex-wrap gap-2">
        <Button type="submit" name="verdict" value="approve" disabled={pending}>
          Approve
        </Button>
        <Button type="submit" name="verdict" value="reject" variant="danger" disabled={pending} className="sm:ml-auto">
          Reject
        </Button>
      </div>
      <p className="text-xs text-slate-500">
        Your verdict covers content digest <code>{contentDigest.slice(0, 12)}…</code>: this code, these schemas and these tests.
      </p>
      <Failure state={state} />
      {state?.ok ? (
        <p role="status" className="text-sm text-emerald-800">
          Recorded. The version is {state.data.status} ({state.data.approvals} of {state.data.required} approvals).
        </p>
      ) : null}
    </form>
  );
}

export function StandingButton({ id, label, action }: { id: string; label: "Confirm" | "Revoke"; action: Action<StandingState> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="space-y-1">
      <input type="hidden" name="id" value={id} />
      <Button type="submit" variant={label === "Revoke" ? "danger" : "primary"} disabled={pending} className="px-2 py-1 text-xs">
        {label}
      </Button>
      <Failure state={state} />
    </form>
  );
}

export const DEFAULT_BOUNDS = '{"type":"object","properties":{},"additionalProperties":true}';

export function ProposeStandingForm({
  skillVersionId,
  notAfter: initialNotAfter,
  action,
}: {
  skillVersionId: string;
  notAfter: string;
  action: Action<StandingState>;
}) {
  const [agents, setAgents] = useState("");
  const [bounds, setBounds] = useState(DEFAULT_BOUNDS);
  const [notAfter, setNotAfter] = useState(initialNotAfter);
  const [maxUses, setMaxUses] = useState("100");
  const [reason, setReason] = useState("");
  const [state, formAction, pending] = useActionState(async (previous: StandingState, form: FormData) => {
    const result = await action(previous, form);
    if (result?.ok) {
      setAgents("");
      setReason("");
    }
    return result;
  }, null);
  const id = useId();
  return (
    <form action={formAction} className="grid gap-3 md:grid-cols-2" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`} className="text-sm font-semibold text-slate-800 md:col-span-2">
        Propose a standing approval
      </h3>
      <input type="hidden" name="skillVersionId" value={skillVersionId} />
      <div>
        <label htmlFor={`${id}-agents`} className={labelClass}>
          Agents
        </label>
        <input
          id={`${id}-agents`}
          name="agents"
          value={agents}
          onChange={(event) => setAgents(event.target.value)}
          spellCheck={false}
          aria-describedby={`${id}-agents-hint`}
          className={field}
        />
        <p id={`${id}-agents-hint`} className="mt-1 text-xs text-slate-500">
          Agent names, separated by commas.
        </p>
      </div>
      <div className="grid grid-cols-2 gap-3">
        <div>
          <label htmlFor={`${id}-not-after`} className={labelClass}>
            Not after
          </label>
          <input
            id={`${id}-not-after`}
            name="notAfter"
            type="datetime-local"
            value={notAfter}
            onChange={(event) => setNotAfter(event.target.value)}
            aria-describedby={`${id}-not-after-hint`}
            className={field}
          />
          <p id={`${id}-not-after-hint`} className="mt-1 text-xs text-slate-500">
            UTC. It covers calls from when a second admin confirms it until then.
          </p>
        </div>
        <div>
          <label htmlFor={`${id}-max-uses`} className={labelClass}>
            Max uses
          </label>
          <input
            id={`${id}-max-uses`}
            name="maxUses"
            type="number"
            min={1}
            max={1_000_000}
            step={1}
            value={maxUses}
            onChange={(event) => setMaxUses(event.target.value)}
            className={field}
          />
        </div>
      </div>
      <div className="md:col-span-2">
        <label htmlFor={`${id}-bounds`} className={labelClass}>
          Bounds (JSON Schema)
        </label>
        <textarea
          id={`${id}-bounds`}
          name="bounds"
          value={bounds}
          onChange={(event) => setBounds(event.target.value)}
          rows={6}
          spellCheck={false}
          aria-describedby={`${id}-bounds-hint`}
          className={code}
        />
        <p id={`${id}-bounds-hint`} className="mt-1 text-xs text-slate-500">
          An object schema over the run_skill arguments, e.g. a maximum amount; a call outside it escalates as policy says.
        </p>
      </div>
      <div className="md:col-span-2">
        <label htmlFor={`${id}-reason`} className={labelClass}>
          Reason
        </label>
        <textarea
          id={`${id}-reason`}
          name="reason"
          value={reason}
          onChange={(event) => setReason(event.target.value)}
          rows={2}
          maxLength={2_000}
          className={field}
        />
      </div>
      <div className="space-y-2 md:col-span-2">
        <Button type="submit" disabled={pending}>
          Propose standing approval
        </Button>
        <Failure state={state} />
        <Done state={state}>Proposed; it covers calls once a second admin confirms it.</Done>
      </div>
    </form>
  );
}
