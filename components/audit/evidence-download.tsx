/**
 * The audit run page's evidence button: a plain link to /api/audit/runs/<id>/evidence, which
 * checks audit:export again, signs a checkpoint and records the export before sending the file.
 * Shown only to people who hold audit:export (the page decides). The note says how to check it.
 */
type Props = { runId: string };

export function EvidenceDownload({ runId }: Props) {
  return (
    <p className="flex flex-wrap items-center gap-x-3 gap-y-1 text-sm">
      <a
        href={`/api/audit/runs/${encodeURIComponent(runId)}/evidence`}
        download={`run-${runId}.evidence.json`}
        className="rounded-md border border-teal-700 px-2 py-1 text-teal-800 hover:bg-teal-50"
        data-testid="evidence-download"
      >
        Download evidence
      </a>
      <span className="text-slate-600">
        One file a third party can check offline: <code>npx airlock audit verify-evidence FILE --public-key PEM</code>
      </span>
    </p>
  );
}
