import type { Metadata } from "next";
import Form from "next/form";
import Link from "next/link";
import { redirect } from "next/navigation";
import { Button, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { isAppError, type AppError } from "@/lib/errors";
import { Decision, RunStatus } from "@/lib/generated/prisma/enums";
import { parseRunFilters, runFiltersQuery, runsList, type RunFilters } from "@/lib/review/runs-presenter";
import { Inert } from "@/components/ui/inert";

export const metadata: Metadata = { title: "Runs" };
export const dynamic = "force-dynamic";

type SearchParams = Record<string, string | string[] | undefined>;

const field = "mt-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";
const label = "block text-xs font-medium text-slate-600";

/** The filters' values as sent, to put back in the form (a refused value stays visible to fix). */
function sentValue(params: SearchParams, key: keyof RunFilters): string {
  const value = params[key];
  return typeof value === "string" ? value : "";
}

function Choice({ name, text, value, options }: { name: keyof RunFilters; text: string; value: string; options: readonly string[] }) {
  return (
    <div>
      <label htmlFor={`runs-${name}`} className={label}>
        {text}
      </label>
      <select id={`runs-${name}`} name={name} defaultValue={value} className={field}>
        <option value="">Any</option>
        {[...new Set([...options, ...(value && !options.includes(value) ? [value] : [])])].map((option) => (
          <option key={option} value={option}>
            {option.replaceAll("_", " ")}
          </option>
        ))}
      </select>
    </div>
  );
}

function Day({ name, text, value }: { name: "from" | "to"; text: string; value: string }) {
  return (
    <div>
      <label htmlFor={`runs-${name}`} className={label}>
        {text}
      </label>
      <input id={`runs-${name}`} name={name} type="date" defaultValue={value} className={field} />
    </div>
  );
}

export default userPage("runs:read", async function RunsPage(_user, { searchParams }: { searchParams: Promise<SearchParams> }) {
  const params = await searchParams;
  let filters: RunFilters | null = null;
  let refused: AppError | null = null;
  try {
    filters = parseRunFilters(params);
  } catch (error) {
    if (!isAppError(error) || error.code !== "bad_request") throw error;
    refused = error;
  }
  // The GET form sends every field; keep shared addresses short by dropping the empty ones.
  if (filters && Object.values(params).some((value) => value === "")) {
    const query = runFiltersQuery(filters);
    redirect(`/runs${query.size ? `?${query}` : ""}`);
  }
  const list = await runsList(prisma(), filters ?? {});
  const filtered = refused !== null || (filters !== null && runFiltersQuery(filters).size > 0);
  return (
    <>
      <PageHeader title="Runs" description="Every script agents have submitted, newest first." />
      {/* Keyed by the query, so a navigation to other filters (Clear filters) resets the fields. */}
      <Form key={JSON.stringify(params)} action="/runs" className="mb-4 flex flex-wrap items-end gap-3" aria-label="Filter the runs">
        <Choice name="status" text="Status" value={sentValue(params, "status")} options={Object.values(RunStatus)} />
        <Choice name="agent" text="Agent" value={sentValue(params, "agent")} options={list.agents} />
        <Choice name="decision" text="Decision" value={sentValue(params, "decision")} options={Object.values(Decision)} />
        <Day name="from" text="Submitted from (UTC day)" value={sentValue(params, "from")} />
        <Day name="to" text="to (UTC day, included)" value={sentValue(params, "to")} />
        <Button type="submit" variant="secondary">
          Filter
        </Button>
        {filtered ? (
          <Link href="/runs" className="py-2 text-sm text-teal-800 underline">
            Clear filters
          </Link>
        ) : null}
      </Form>
      {refused ? (
        <p role="alert" data-testid="filter-error" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-800">
          {refused.message}
        </p>
      ) : list.runs.length === 0 ? (
        <EmptyState title={filtered ? "No run matches these filters" : "No runs yet"}>
          {filtered ? "Clear the filters to see every run." : "When an agent submits a script through the MCP endpoint, it is listed here."}
        </EmptyState>
      ) : (
        <>
          <Table caption="Runs" headers={["Submitted", "Agent", "Purpose", "Decision", "Status"]}>
            {list.runs.map((run) => (
              <tr key={run.id} data-testid={`run-row-${run.id}`}>
                <Td>
                  <Time iso={run.createdAt} />
                </Td>
                <Td>
                  <Inert text={run.agent} />
                </Td>
                <Td>
                  <Link href={`/runs/${run.id}`} className="font-medium text-teal-800 underline-offset-2 hover:underline">
                    <Inert text={run.purpose} />
                  </Link>
                </Td>
                <Td data-testid="decision">{run.decision ?? "—"}</Td>
                <Td>
                  <StatusBadge status={run.status} errorCode={run.errorCode} />
                </Td>
              </tr>
            ))}
          </Table>
          {list.more ? <p className="mt-2 text-xs text-slate-500">The newest {list.runs.length} are shown; narrow the filters to see older runs.</p> : null}
        </>
      )}
    </>
  );
});
