/**
 * The script with line numbers, syntax colours and findings marked on their lines. Tokens come
 * from the server's highlighter (the script's exact characters, on JavaScript's lines, so line N
 * is line N of the findings) and are rendered through components/ui/inert.tsx: text nodes, and a
 * marker element for every hidden character — ESC, bidi controls, and the U+2028/U+2029 that end
 * a line (shown at the end of the line they end).
 *
 * Long lines wrap inside their numbered row (at any character when a token is longer than the
 * row), so nothing is off to the right: a wrapped line keeps one number, and the next number starts
 * the next JavaScript line.
 */
import { Fragment } from "react";
import { Inert } from "@/components/ui/inert";
import type { FindingItem, HighlightedLine, LineDiff, TokenKind } from "@/lib/review/dto";
import { splitJsLines } from "@/lib/untrusted/invisible";

const TOKEN_CLASS = {
  keyword: "text-fuchsia-300",
  string: "text-emerald-300",
  number: "text-amber-300",
  comment: "text-slate-400 italic",
  regex: "text-orange-300",
  identifier: "text-sky-200",
  punctuation: "text-slate-300",
  text: "",
} as const satisfies Record<TokenKind, string>;

const SEVERITY_CLASS: Record<string, string> = {
  critical: "bg-red-900/70 text-red-100",
  error: "bg-red-900/50 text-red-100",
  warning: "bg-amber-900/60 text-amber-100",
  info: "bg-slate-800 text-slate-200",
};

export function CodeView({ lines, findingsByLine, label }: { lines: HighlightedLine[]; findingsByLine: Record<number, FindingItem[]>; label: string }) {
  return (
    <div role="region" aria-label={label} tabIndex={0} className="overflow-x-auto rounded-md bg-slate-950 py-2 font-mono text-xs leading-5 text-slate-100">
      <table className="w-full border-collapse">
        <tbody>
          {lines.map((tokens, index) => {
            const line = index + 1;
            const findings = findingsByLine[line];
            return (
              <Fragment key={line}>
                <tr data-line={line} data-finding={findings ? "true" : undefined} className={findings ? "bg-red-950/70" : undefined}>
                  <td className="w-10 select-none pr-3 pl-2 text-right align-top text-slate-500" aria-hidden="true">
                    {line}
                  </td>
                  <td className="pr-4 whitespace-pre-wrap wrap-anywhere">
                    <span className="sr-only">line {line}: </span>
                    {tokens.map((token, k) => (
                      <span key={k} className={TOKEN_CLASS[token.kind]}>
                        <Inert text={token.text} />
                      </span>
                    ))}
                  </td>
                </tr>
                {findings ? (
                  <tr>
                    <td aria-hidden="true" />
                    <td className="pr-4 pb-1">
                      {findings.map((finding, k) => (
                        <p
                          key={k}
                          role="note"
                          data-testid="finding"
                          className={`my-0.5 rounded px-2 py-0.5 font-sans ${SEVERITY_CLASS[finding.severity] ?? SEVERITY_CLASS.info}`}
                        >
                          <strong>{finding.severity}</strong> <span data-finding-code={finding.code}>{finding.code}</span> (line {finding.line}, column{" "}
                          {finding.column}): <Inert text={finding.message} />
                        </p>
                      ))}
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function DiffView({
  diff,
  label = "Changes since the previous attempt",
  sameText = "The code is identical to the previous attempt.",
}: {
  diff: LineDiff;
  label?: string;
  sameText?: string;
}) {
  if (diff.tooLarge) return <p className="text-sm text-slate-600">Too long to compare here.</p>;
  if (diff.added === 0 && diff.removed === 0) return <p className="text-sm text-slate-600">{sameText}</p>;
  return (
    <div role="region" aria-label={label} tabIndex={0} className="overflow-x-auto rounded-md border border-slate-200 bg-white py-1 font-mono text-xs leading-5">
      <p className="px-2 pb-1 font-sans text-slate-600">
        {diff.added} line{diff.added === 1 ? "" : "s"} added, {diff.removed} removed
      </p>
      <table className="w-full border-collapse">
        <tbody>
          {diff.lines.map((line, i) => (
            <tr key={i} data-diff={line.kind} className={line.kind === "added" ? "bg-emerald-50" : line.kind === "removed" ? "bg-red-50" : undefined}>
              <td className="w-8 select-none pr-2 text-right text-slate-400">{line.oldLine ?? ""}</td>
              <td className="w-8 select-none pr-2 text-right text-slate-400">{line.newLine ?? ""}</td>
              <td className="w-4 select-none text-slate-500">
                <span aria-hidden="true">{line.kind === "added" ? "+" : line.kind === "removed" ? "−" : " "}</span>
                <span className="sr-only">{line.kind === "same" ? "" : line.kind}</span>
              </td>
              <td className="pr-4 whitespace-pre-wrap wrap-anywhere">
                <Inert text={line.text} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Code without analysis (e.g. in the audit timeline): the same numbered JavaScript lines and markers, uncoloured. */
export function PlainCodeView({ code, label }: { code: string; label: string }) {
  const lines: HighlightedLine[] = splitJsLines(code).map((text) => (text ? [{ kind: "text", text }] : []));
  return <CodeView lines={lines} findingsByLine={{}} label={label} />;
}
