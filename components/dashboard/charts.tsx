/** Dependency-free charts for the dashboard: stacked daily bars and ranked horizontal bars. */
import type { ReactNode } from "react";

const SERIES = [
  { key: "succeeded", label: "succeeded", color: "bg-emerald-500" },
  { key: "failed", label: "failed", color: "bg-red-500" },
  { key: "denied", label: "denied / rejected", color: "bg-amber-500" },
  { key: "other", label: "waiting / other", color: "bg-slate-400" },
] as const;

type Day = { day: string; succeeded: number; failed: number; denied: number; other: number };

/** The daily bars; `empty` instead of a blank frame when no day has a run. */
export function RunsPerDay({ days, empty }: { days: Day[]; empty: ReactNode }) {
  const max = Math.max(0, ...days.map((d) => d.succeeded + d.failed + d.denied + d.other));
  if (max === 0) return <div data-testid="runs-per-day-empty">{empty}</div>;
  return (
    <figure>
      <div className="flex h-40 items-end gap-1" role="img" aria-label="Runs by outcome per day, last 14 days">
        {days.map((d) => {
          const total = d.succeeded + d.failed + d.denied + d.other;
          return (
            <div key={d.day} className="flex h-full flex-1 flex-col justify-end" title={`${d.day}: ${total} runs`}>
              {SERIES.map((s) => (d[s.key] > 0 ? <div key={s.key} className={s.color} style={{ height: `${(d[s.key] / max) * 100}%` }} /> : null))}
            </div>
          );
        })}
      </div>
      <div className="mt-1 flex justify-between text-xs text-slate-500">
        <span>{days[0]?.day}</span>
        <span>{days.at(-1)?.day}</span>
      </div>
      <figcaption className="mt-2 flex flex-wrap gap-3 text-xs text-slate-600">
        {SERIES.map((s) => (
          <span key={s.key} className="inline-flex items-center gap-1">
            <span className={`inline-block h-2 w-2 rounded-sm ${s.color}`} aria-hidden /> {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

export function RankedBars({ rows, empty }: { rows: { label: string; value: number }[]; empty: ReactNode }) {
  if (rows.length === 0) return <p className="text-sm text-slate-500">{empty}</p>;
  const max = Math.max(...rows.map((r) => r.value));
  return (
    <ul className="space-y-2 text-sm">
      {rows.map((row) => (
        <li key={row.label}>
          <div className="flex justify-between">
            <span className="truncate font-mono text-xs">{row.label}</span>
            <span className="font-medium">{row.value}</span>
          </div>
          <div className="mt-1 h-2 rounded bg-slate-100">
            <div className="h-2 rounded bg-teal-600" style={{ width: `${(row.value / max) * 100}%` }} />
          </div>
        </li>
      ))}
    </ul>
  );
}
