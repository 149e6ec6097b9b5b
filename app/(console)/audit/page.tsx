/**
 * Compliance search: the query lives in the URL; every search is itself audited
 * ("audit.searched", through lib/audit/service.ts) before results are shown.
 */
import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { AuditExportForm } from "@/components/audit/export-form";
import { AuditSearchForm, type SearchFormValues } from "@/components/audit/search-form";
import { AuditSearchResults } from "@/components/audit/search-results";
import { VerificationPanel } from "@/components/audit/verification-panel";
import { PageHeader } from "@/components/ui/primitives";
import { filtersFromSearchParams, filtersToSearchParams } from "@/lib/audit/filters";
import { filterSuggestions, lastVerification } from "@/lib/audit/presenter";
import { searchAudited } from "@/lib/audit/service";
import { userPage } from "@/lib/auth/user-route";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { DataClass, Decision, RunStatus } from "@/lib/generated/prisma/enums";
import { verifyAuditAction } from "./actions";

export const metadata: Metadata = { title: "Audit" };
export const dynamic = "force-dynamic";

type SearchParams = Record<string, string | string[] | undefined>;

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export default userPage("audit:read", async function AuditPage(user, { searchParams }: { searchParams: Promise<SearchParams> }) {
  const params = await searchParams;
  const parsed = filtersFromSearchParams(params, ["after"]);
  const after = first(params.after) ?? null;
  // The GET form submits every field; keep shared URLs short by dropping the empty ones.
  if (parsed.ok && Object.values(params).some((value) => first(value) === "")) {
    const canonical = filtersToSearchParams(parsed.filters);
    if (after) canonical.set("after", after);
    redirect(`/audit${canonical.size ? `?${canonical}` : ""}`);
  }
  const values = Object.fromEntries(
    Object.entries(params)
      .map(([key, value]) => [key, first(value)])
      .filter(([, value]) => value !== undefined),
  ) as SearchFormValues;

  const [page, last, suggestions] = await Promise.all([
    parsed.ok ? searchAudited(prisma(), user, parsed.filters, { after }) : Promise.resolve(null),
    lastVerification(prisma()),
    filterSuggestions(prisma()),
  ]);
  const query = parsed.ok ? filtersToSearchParams(parsed.filters) : new URLSearchParams();
  const nextHref = page?.nextCursor ? `/audit?${new URLSearchParams([...query.entries(), ["after", page.nextCursor]])}` : null;
  const canExport = hasScope(user, "audit:export");

  return (
    <>
      <PageHeader
        title="Audit log"
        description="Find any run by what it did, see its whole story, export evidence, and check that the log is intact. Searches, views and exports are audited."
      />
      <VerificationPanel last={last} action={verifyAuditAction} />
      <AuditSearchForm
        values={values}
        statuses={Object.values(RunStatus)}
        decisions={Object.values(Decision)}
        dataClasses={Object.values(DataClass)}
        suggestions={suggestions}
      />
      <div className="my-4 flex flex-wrap items-center justify-between gap-2 text-sm">
        <p className="text-slate-600">{page ? `${page.items.length}${page.nextCursor ? "+" : ""} run(s), newest first` : ""}</p>
        {canExport && parsed.ok ? <AuditExportForm query={query} /> : null}
      </div>
      {parsed.ok ? (
        <AuditSearchResults rows={page!.items} nextHref={nextHref} />
      ) : (
        <p role="alert" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-800">
          {parsed.error}
        </p>
      )}
    </>
  );
});
