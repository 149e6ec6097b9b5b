/**
 * The compliance search's filters: one closed schema shared by the console (URL query string),
 * the export route and the CLI (flags), so a shared link, a bookmark and an export all mean the
 * same thing. Unknown parameters are refused (strict), and so is a parameter given twice; values
 * are bounded, enums are closed, text PostgreSQL cannot store (U+0000, lone surrogates) is refused
 * by name, times without a zone are read as UTC, and a day that does not exist or is before 1970
 * is refused.
 */
import { z } from "zod";
import { DataClass, Decision, RunStatus } from "@/lib/generated/prisma/enums";
import { storableString } from "@/lib/untrusted/storable-schema";

const text = (max: number) =>
  storableString()
    .trim()
    .max(max)
    .transform((value) => (value === "" ? undefined : value))
    .optional();

/**
 * A day on the calendar written YYYY-MM-DD, from 1970 on: not rolled over (2026-02-30 is refused),
 * and not before anything was logged (PostgreSQL refuses a year 0). The console's runs filters use it too.
 */
export function isCalendarDay(value: string): boolean {
  const midnight = Date.parse(`${value}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(midnight) && new Date(midnight).toISOString().slice(0, 10) === value && value >= "1970-01-01";
}

const time = z
  .string()
  .trim()
  .transform((value, ctx) => {
    if (value === "") return undefined;
    const match = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.exec(value);
    const date = match ? new Date(match[2] ? (match[5] ? value : `${value}Z`) : `${value}T00:00:00Z`) : new Date(NaN);
    const day = match?.[1] ?? "";
    if (Number.isNaN(date.getTime()) || !isCalendarDay(day)) {
      const message = /^\d{4}/.test(day) && day < "1970" ? "must be on or after 1970-01-01" : "must be a date or time like 2026-11-30 or 2026-11-30T14:00Z";
      ctx.addIssue({ code: "custom", message });
      return z.NEVER;
    }
    return date;
  })
  .optional();

const optionalEnum = <T extends Record<string, string>>(values: T) =>
  z
    .string()
    .trim()
    .transform((value, ctx) => {
      if (value === "") return undefined;
      const allowed = Object.values(values);
      if (!allowed.includes(value)) {
        ctx.addIssue({ code: "custom", message: `must be one of ${allowed.join(", ")}` });
        return z.NEVER;
      }
      return value as T[keyof T];
    })
    .optional();

export const auditFiltersSchema = z
  .object({
    /**
     * Full text over code, purpose, provenance, tool-call arguments and results, result, error,
     * logs, review comments and release reasons (web-search syntax; identifiers also match by their parts).
     */
    q: text(200),
    /** Agent name, or any part of it (any case). */
    agent: text(200),
    /** A person's email or name, or any part of it (any case): owner of the run's agent, a reviewer of the run, or who released its result. */
    person: text(320),
    status: optionalEnum(RunStatus),
    decision: optionalEnum(Decision),
    /** Data class of an input or of a tool the run may call. */
    dataClass: optionalEnum(DataClass),
    /** `server.tool` in the run's approved capability set. */
    tool: z
      .string()
      .trim()
      .max(200)
      .regex(/^([A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+)?$/, "must be server.tool")
      .transform((value) => (value === "" ? undefined : value))
      .optional(),
    /** sha256 of the submitted code (64 hex characters). */
    codeHash: z
      .string()
      .trim()
      .regex(/^([0-9a-fA-F]{64})?$/, "must be a sha256 (64 hex characters)")
      .transform((value) => (value === "" ? undefined : value.toLowerCase()))
      .optional(),
    since: time,
    until: time,
  })
  .strict();

export type AuditFilters = z.output<typeof auditFiltersSchema>;
export const FILTER_KEYS = Object.keys(auditFiltersSchema.shape) as (keyof AuditFilters)[];

/** Filters from a URL's query string; `extra` names other parameters the caller handles itself. */
export function filtersFromSearchParams(
  params: URLSearchParams | Record<string, string | string[] | undefined>,
  extra: readonly string[] = [],
): { ok: true; filters: AuditFilters } | { ok: false; error: string } {
  const entries: Record<string, string> = {};
  const source = params instanceof URLSearchParams ? [...params.entries()] : Object.entries(params);
  const seen = new Set<string>();
  for (const [key, raw] of source) {
    // A parameter given twice means nothing one way: every door refuses it, extras included.
    if (seen.has(key) || (Array.isArray(raw) && raw.length > 1)) return { ok: false, error: `${key}: given more than once; give it once` };
    seen.add(key);
    if (extra.includes(key) || raw === undefined) continue;
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value !== undefined) entries[key] = value;
  }
  const parsed = auditFiltersSchema.safeParse(entries);
  if (!parsed.success) {
    return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join(".") || "query"}: ${i.message}`).join("; ") };
  }
  return { ok: true, filters: parsed.data };
}

/** The filters as query-string entries (for links: the next page, the export button). */
export function filtersToSearchParams(filters: AuditFilters): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = filters[key];
    if (value === undefined) continue;
    params.set(key, value instanceof Date ? value.toISOString() : String(value));
  }
  return params;
}

/** The filters as plain JSON, for audit events and export manifests. */
export function filtersForRecord(filters: AuditFilters): Record<string, string> {
  return Object.fromEntries(filtersToSearchParams(filters).entries());
}

/** True when any filter narrows runs (as opposed to only the time range). */
export function hasRunFilters(filters: AuditFilters): boolean {
  return FILTER_KEYS.some((key) => key !== "since" && key !== "until" && filters[key] !== undefined);
}
