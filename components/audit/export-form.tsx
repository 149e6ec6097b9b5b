/**
 * The audit page's export controls: the matching events (JSONL or CSV, optionally without the
 * log's own reads — searches, views, exports, verifications) as a plain GET form to
 * /api/audit/export carrying the current filters, and one row per matching run as links. The
 * route re-validates everything; the export is audited before the first byte.
 */
type Props = { query: URLSearchParams };

const button = "rounded-md border border-teal-700 px-2 py-1 text-sm text-teal-800 hover:bg-teal-50";

export function AuditExportForm({ query }: Props) {
  const runs = (format: string) => `/api/audit/export?${new URLSearchParams([...query.entries(), ["format", format], ["rows", "runs"]])}`;
  return (
    <div className="flex flex-wrap items-center gap-x-4 gap-y-2 text-sm">
      <form method="get" action="/api/audit/export" aria-label="Export the matching events" className="flex flex-wrap items-center gap-2">
        {[...query.entries()].map(([key, value]) => (
          <input key={key} type="hidden" name={key} value={value} />
        ))}
        <span className="text-slate-600">Events:</span>
        <button type="submit" name="format" value="jsonl" className={button}>
          JSONL
        </button>
        <button type="submit" name="format" value="csv" className={button}>
          CSV
        </button>
        <label className="flex items-center gap-1 text-slate-600">
          <input type="checkbox" name="auditReads" value="exclude" />
          leave out the audit log&apos;s own reads
        </label>
      </form>
      <p className="space-x-2">
        <span className="text-slate-600">One row per run:</span>
        <a className="text-teal-700 underline" href={runs("csv")}>
          CSV
        </a>
        <a className="text-teal-700 underline" href={runs("jsonl")}>
          JSONL
        </a>
      </p>
    </div>
  );
}
