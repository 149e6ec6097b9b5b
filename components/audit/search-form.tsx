/**
 * The compliance search form: a plain GET form, so the query lives in the URL (shareable,
 * bookmarkable, back-button friendly) and works without JavaScript. The server re-validates
 * every parameter (lib/audit/filters.ts); the options here are only what the page offers. Agent
 * and person take any part of a name or email, and suggest the known ones (a <datalist>).
 */
export type SearchFormValues = Partial<
  Record<"q" | "agent" | "person" | "status" | "decision" | "dataClass" | "tool" | "codeHash" | "since" | "until", string>
>;

type Props = {
  values: SearchFormValues;
  statuses: readonly string[];
  decisions: readonly string[];
  dataClasses: readonly string[];
  /** Agent names and people ("email" values, with their names) the agent and person fields suggest. */
  suggestions: { agents: readonly string[]; people: readonly { email: string; name: string }[] };
};

const input = "mt-1 w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm";
const label = "block text-xs font-medium text-slate-600";

function Select({ name, labelText, value, options }: { name: string; labelText: string; value?: string; options: readonly string[] }) {
  return (
    <div>
      <label htmlFor={`f-${name}`} className={label}>
        {labelText}
      </label>
      <select id={`f-${name}`} name={name} defaultValue={value ?? ""} className={input}>
        <option value="">any</option>
        {options.map((option) => (
          <option key={option} value={option}>
            {option.replaceAll("_", " ")}
          </option>
        ))}
      </select>
    </div>
  );
}

function Text({
  name,
  labelText,
  value,
  placeholder,
  type = "text",
  list,
}: {
  name: string;
  labelText: string;
  value?: string;
  placeholder?: string;
  type?: string;
  list?: string;
}) {
  return (
    <div>
      <label htmlFor={`f-${name}`} className={label}>
        {labelText}
      </label>
      <input id={`f-${name}`} name={name} type={type} defaultValue={value ?? ""} placeholder={placeholder} list={list} autoComplete="off" className={input} />
    </div>
  );
}

export function AuditSearchForm({ values, statuses, decisions, dataClasses, suggestions }: Props) {
  return (
    <form method="get" action="/audit" role="search" aria-label="Search the audit log" className="space-y-3 rounded-lg border border-slate-200 bg-white p-4">
      <div className="flex gap-2">
        <div className="flex-1">
          <label htmlFor="f-q" className="sr-only">
            Words in code, purpose, results, logs or review comments
          </label>
          <input
            id="f-q"
            name="q"
            type="search"
            defaultValue={values.q ?? ""}
            placeholder='Words in code, purpose, results, logs, comments — e.g. refund -test "overdue invoices"'
            className="w-full rounded-md border border-slate-300 px-3 py-2 text-sm"
          />
        </div>
        <button type="submit" className="rounded-md bg-teal-700 px-4 py-2 text-sm font-medium text-white hover:bg-teal-800">
          Search
        </button>
      </div>
      <div className="grid grid-cols-2 gap-3 md:grid-cols-5">
        <Text name="agent" labelText="Agent" value={values.agent} placeholder="name or part of it" list="f-agent-suggestions" />
        <Text name="person" labelText="Person (owner or reviewer)" value={values.person} placeholder="email, name or part of it" list="f-person-suggestions" />
        <Select name="status" labelText="Status" value={values.status} options={statuses} />
        <Select name="decision" labelText="Decision" value={values.decision} options={decisions} />
        <Select name="dataClass" labelText="Data class" value={values.dataClass} options={dataClasses} />
        <Text name="tool" labelText="Tool" value={values.tool} placeholder="server.tool" />
        <Text name="codeHash" labelText="Code sha256" value={values.codeHash} placeholder="64 hex characters" />
        <Text name="since" labelText="From (UTC)" value={values.since} placeholder="2026-11-01" />
        <Text name="until" labelText="Until (UTC, exclusive)" value={values.until} placeholder="2026-12-01T00:00" />
        <div className="flex items-end">
          <a href="/audit" className="text-sm text-teal-700 underline">
            Clear
          </a>
        </div>
      </div>
      <datalist id="f-agent-suggestions">
        {suggestions.agents.map((agent) => (
          <option key={agent} value={agent} />
        ))}
      </datalist>
      <datalist id="f-person-suggestions">
        {suggestions.people.map((person) => (
          <option key={person.email} value={person.email} label={person.name} />
        ))}
      </datalist>
    </form>
  );
}
