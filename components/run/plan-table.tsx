/**
 * The plan a preview built: every write the run will make, in order, with its arguments and the
 * money it moves, and the totals per currency — shown before the code, because this is what an
 * approval covers. Arguments are inert text from the presenter (lib/review/run-presenter.ts).
 */
import { Inert } from "@/components/ui/inert";
import type { PlanView } from "@/lib/review/run-dto";

/** A decimal amount with its whole part in groups of three: 999999.99 → 999,999.99. */
function grouped(amount: string): string {
  return amount.replace(/^-?\d+/, (whole) => whole.replace(/\B(?=(\d{3})+$)/g, ","));
}

function totalsLine(totals: PlanView["totals"]): string[] {
  return totals.map(({ count, total, negative, currency, subjects }) => {
    const signs = negative > 0 ? ` (${negative} of them negative: each counts by its size; read them below)` : "";
    const what = `${count} ${count === 1 ? "write" : "writes"} moving ${grouped(total)} ${currency ?? "(currency not stated)"}${signs}`;
    return subjects.length > 0 ? `${what}, for ${subjects.join(", ")}` : what;
  });
}

export function PlanTable({ plan }: { plan: PlanView }) {
  if (plan.writes.length === 0) {
    return <p className="text-sm text-slate-600">The preview made no writes: approving lets the script read, and write nothing.</p>;
  }
  return (
    <div className="space-y-3" data-testid="plan">
      <p className="text-sm text-slate-700">
        The script was run with every write intercepted. Approving allows exactly{" "}
        {plan.writes.length === 1 ? "this write, with these arguments" : `these ${plan.writes.length} writes, in this order and with these arguments`}; a run
        that tries anything else is stopped before the call.
      </p>
      {plan.totals.length > 0 ? (
        <ul className="rounded-md border border-amber-200 bg-amber-50 px-3 py-2 text-sm font-medium text-amber-900" data-testid="plan-totals">
          {totalsLine(plan.totals).map((line) => (
            <li key={line}>
              <Inert text={line} />
            </li>
          ))}
        </ul>
      ) : null}
      <div className="overflow-x-auto">
        <table className="w-full text-left text-sm">
          <caption className="sr-only">Planned writes</caption>
          <thead className="text-xs text-slate-600">
            <tr>
              <th className="py-1 pr-3">#</th>
              <th className="py-1 pr-3">Tool</th>
              <th className="py-1 pr-3">Money</th>
              <th className="py-1">Arguments</th>
            </tr>
          </thead>
          <tbody>
            {plan.writes.map((write, index) => (
              <tr key={write.seq} className="border-t border-slate-100 align-top" data-testid={`plan-write-${index + 1}`}>
                <td className="py-2 pr-3 font-mono text-xs">{index + 1}</td>
                <td className="py-2 pr-3 font-mono text-xs">{write.tool}</td>
                <td className="py-2 pr-3 whitespace-nowrap">
                  {write.money ? (
                    <span data-testid="plan-money">
                      {write.money.amount} {write.money.currency ?? ""}
                      {write.money.subject ? (
                        <span className="block text-xs text-slate-500">
                          <Inert text={write.money.subject} />
                        </span>
                      ) : null}
                    </span>
                  ) : (
                    "—"
                  )}
                </td>
                <td className="py-2">
                  {write.instructionLike ? (
                    <p className="mb-1 text-xs font-medium text-red-700" data-testid="plan-instruction-like">
                      Its text reads like instructions to an AI model: whoever reads what this write stores may be an agent.
                    </p>
                  ) : null}
                  <pre className="font-mono text-xs break-words whitespace-pre-wrap text-slate-800">
                    <Inert text={write.arguments} />
                  </pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="font-mono text-xs text-slate-500">plan digest {plan.digest.slice(0, 16)}…</p>
    </div>
  );
}
