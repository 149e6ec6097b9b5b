/**
 * Retention windows: how long each data class keeps its payloads (docs/audit.md, "Retention").
 * The days come from airlock.config.json (`retention.days`, parsed by lib/broker/config.ts); a
 * class the config does not name keeps its default below, and a class with no default of its own
 * (public, confidential, phi) takes `default`.
 *
 * Guarantees, for one run:
 * - a tool call's arguments and result follow its tool's class;
 * - the run's result, error, logs, prompt and context, plan and artifacts follow the SHORTEST
 *   window among its classes (the inputs' and tools' classes analysis found, `facts.dataClasses`;
 *   none → `default`);
 * - its code, JavaScript and purpose — the evidence of what ran — follow the LONGEST, and so does
 *   every payload still left then.
 * A window runs from the moment the run ended. Pure: no database, no clock.
 */
import { DATA_CLASSES, type DataClass } from "@/lib/contracts/data-classes";

export const RETENTION_DEFAULT_DAYS = { pii: 30, financial: 2555, internal: 90, default: 365 } as const;

/** Days per class; `default` for classes not named. */
export type RetentionDays = Partial<Record<DataClass, number>> & { default: number };

export const DAY_MS = 86_400_000;

/** Fields of a run purged when its shortest window ends. */
export const SHORTEST_WINDOW_FIELDS = ["result", "error", "execution", "provenance", "plan", "artifacts"] as const;
/** Fields of a run purged when its longest window ends (with anything still left). */
export const LONGEST_WINDOW_FIELDS = ["code", "purpose", "javascript"] as const;
export type PurgeableField = (typeof SHORTEST_WINDOW_FIELDS)[number] | (typeof LONGEST_WINDOW_FIELDS)[number];

export function isDataClass(value: string): value is DataClass {
  return (DATA_CLASSES as readonly string[]).includes(value);
}

/** The window of one class (an unknown or missing class takes `default`). */
export function classDays(days: RetentionDays, dataClass: string | null | undefined): number {
  return (dataClass && isDataClass(dataClass) ? days[dataClass] : undefined) ?? days.default;
}

export type RunWindows = { classes: string[]; shortest: number; longest: number };

/** The shortest and longest windows among a run's classes (no classes: `default` for both). */
export function runWindows(days: RetentionDays, classes: readonly string[]): RunWindows {
  const known = [...new Set(classes)].sort();
  const windows = known.length ? known.map((c) => classDays(days, c)) : [days.default];
  return { classes: known, shortest: Math.min(...windows), longest: Math.max(...windows) };
}

/** Whether something that ended at `ended` is past a window of `windowDays` at `asOf`. */
export function windowOver(ended: Date, windowDays: number, asOf: Date): boolean {
  return ended.getTime() <= asOf.getTime() - windowDays * DAY_MS;
}
