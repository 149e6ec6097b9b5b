/**
 * The script's tool calls, one argument per row (lib/review/tool-uses.ts): the literal value where
 * the source spells it out, otherwise "computed at run time" with the expression that computes it.
 * One table, a group of rows per call headed by the tool and where it is called; two columns, so
 * it fits a phone, and long values wrap, so nothing is off to the side. Everything shown came from
 * the script and is rendered through components/ui/inert.tsx.
 */
import { Inert } from "@/components/ui/inert";
import type { CallArgument, ToolUse, ToolUses } from "@/lib/review/dto";

function Value({ argument }: { argument: CallArgument }) {
  return (
    <>
      {argument.known ? null : <p className="text-xs font-medium text-amber-800">computed at run time</p>}
      <code className={`block font-mono text-xs wrap-anywhere whitespace-pre-wrap ${argument.known ? "text-slate-900" : "text-slate-500"}`}>
        <Inert text={argument.value} />
      </code>
      {argument.note ? (
        <p className="text-xs text-amber-800">
          <Inert text={argument.note} />
        </p>
      ) : null}
    </>
  );
}

function Call({ use }: { use: ToolUse }) {
  const cell = "px-4 py-2 align-top";
  return (
    <tbody className="divide-y divide-slate-100 border-t border-slate-200">
      <tr data-testid="tool-use-call" data-tool={use.tool} data-line={use.line}>
        <th scope="rowgroup" colSpan={2} className="bg-slate-50/60 px-4 py-2 text-left font-normal">
          <span className="font-mono text-xs font-semibold wrap-anywhere">
            tools.
            <Inert text={use.tool} />
          </span>{" "}
          <span className="text-xs whitespace-nowrap text-slate-600">
            line {use.line}, column {use.column}
          </span>
        </th>
      </tr>
      {use.arguments.map((argument, i) => (
        <tr key={i} data-testid="tool-use" data-tool={use.tool} data-argument={argument.name} data-known={argument.known}>
          <td className={`${cell} w-1/3 font-mono text-xs wrap-anywhere`}>
            <Inert text={argument.name} />
          </td>
          <td className={cell}>
            <Value argument={argument} />
          </td>
        </tr>
      ))}
      {use.arguments.length === 0 ? (
        <tr data-testid="tool-use" data-tool={use.tool}>
          <td colSpan={2} className={`${cell} text-slate-600`}>
            {use.called ? "no arguments" : "taken as a value: the arguments of its calls are computed at run time"}
          </td>
        </tr>
      ) : null}
      {use.moreArguments > 0 ? (
        <tr>
          <td colSpan={2} className={`${cell} text-xs text-slate-600`}>
            {use.moreArguments} more argument{use.moreArguments === 1 ? "" : "s"} not listed; see line {use.line} of the code
          </td>
        </tr>
      ) : null}
    </tbody>
  );
}

export function ToolUsesTable({ toolUses }: { toolUses: ToolUses }) {
  if (toolUses.uses.length === 0) return <p className="text-sm text-slate-600">The code calls no tools.</p>;
  return (
    <div className="space-y-2">
      <div className="scroll-cue overflow-x-auto rounded-lg border border-slate-200 bg-white">
        <table className="min-w-full text-sm">
          <caption className="sr-only">Every tool call in the code, one argument per row</caption>
          <thead className="bg-slate-50">
            <tr>
              <th scope="col" className="px-4 py-2 text-left font-semibold text-slate-700">
                Argument
              </th>
              <th scope="col" className="px-4 py-2 text-left font-semibold text-slate-700">
                Value
              </th>
            </tr>
          </thead>
          {toolUses.uses.map((use, i) => (
            <Call key={i} use={use} />
          ))}
        </table>
      </div>
      {toolUses.omitted > 0 ? (
        <p className="text-sm text-amber-800">
          {toolUses.omitted} more tool reference{toolUses.omitted === 1 ? "" : "s"} not listed here; the code above shows them all.
        </p>
      ) : null}
    </div>
  );
}
