/**
 * The runs list's read model: `parseRunFilters` reads the filters in the page's URL, `runsList`
 * loads the newest runs that match them, `hasRuns` tells an empty installation from a quiet one.
 *
 * Guarantees: the filters are parsed with a closed schema — status and decision from their
 * vocabularies, an agent name, and whole UTC days `from`/`to` (YYYY-MM-DD, both days included).
 * Refuses with AppError "bad_request", naming each parameter and what it must be: an unknown
 * parameter, a repeated one, a value outside its vocabulary, a day that is not on the calendar,
 * `to` before `from`, text PostgreSQL cannot store. Empty values mean "any". Returns plain DTOs,
 * never Prisma objects; agent names and purposes are inert text (lib/untrusted/inert.ts).
 */
import "server-only";
import { z } from "zod";
import { isCalendarDay } from "@/lib/audit/filters";
import type { Db } from "@/lib/db";
import { runColumn } from "@/lib/contracts/run-columns";
import { shownErrorCode } from "@/lib/contracts/run-states";
import { AppError } from "@/lib/errors";
import { Decision, RunStatus } from "@/lib/generated/prisma/enums";
import { inertText } from "@/lib/untrusted/inert";
import { storableString } from "@/lib/untrusted/storable-schema";

const DAY_MS = 86_400_000;

/** "" means the parameter was left at "any". */
const blank = (value: unknown) => (value === "" ? undefined : value);

const oneOf = <T extends Record<string, string>>(values: T) =>
  z.preprocess(
    blank,
    z
      .string()
      .refine((value) => Object.values(values).includes(value), { message: `must be one of ${Object.values(values).join(", ")}` })
      .transform((value) => value as T[keyof T])
      .optional(),
  );

/** A real calendar day from 1970 on (lib/audit/filters.ts isCalendarDay), as the audit search's filters take it. */
const day = z.preprocess(blank, z.string().refine(isCalendarDay, { message: "must be a calendar day like 2026-11-30, from 1970 on" }).optional());

const runFiltersSchema = z
  .strictObject({
    status: oneOf(RunStatus),
    decision: oneOf(Decision),
    agent: z.preprocess(blank, storableString().max(200, "must be at most 200 characters").optional()),
    from: day,
    to: day,
  })
  .refine((filters) => !filters.from || !filters.to || filters.from <= filters.to, { message: "must not be before from", path: ["to"] });

export type RunFilters = z.output<typeof runFiltersSchema>;
const RUN_FILTER_KEYS = ["status", "decision", "agent", "from", "to"] as const satisfies readonly (keyof RunFilters)[];

/** The filters in a query string. Throws AppError "bad_request" with one sentence per problem. */
export function parseRunFilters(params: Record<string, string | string[] | undefined>): RunFilters {
  const repeated = Object.entries(params).filter(([, value]) => Array.isArray(value));
  const parsed = runFiltersSchema.safeParse(Object.fromEntries(Object.entries(params).filter(([, value]) => typeof value === "string")));
  const problems = [
    ...repeated.map(([key]) => `${key}: give it once`),
    ...(parsed.success
      ? []
      : parsed.error.issues.map((issue) =>
          issue.code === "unrecognized_keys" ? `${issue.keys.join(", ")}: not a filter of this list` : `${issue.path.join(".")}: ${issue.message}`,
        )),
  ];
  if (problems.length > 0 || !parsed.success) {
    throw new AppError("bad_request", `These filters cannot be applied. ${problems.join("; ")}.`, { details: { problems } });
  }
  return parsed.data;
}

/** The filters as a query string without the empty ones (the page's canonical address). */
export function runFiltersQuery(filters: RunFilters): URLSearchParams {
  const query = new URLSearchParams();
  for (const key of RUN_FILTER_KEYS) if (filters[key] !== undefined) query.set(key, filters[key]);
  return query;
}

/** `errorCode`: the run's error code, when it has one (a run that succeeded may: SWALLOWED_FAILURE). */
export type RunRow = { id: string; agent: string; status: string; errorCode: string | null; purpose: string; decision: string | null; createdAt: string };
export type RunsList = { runs: RunRow[]; more: boolean; agents: string[] };

/** The newest `take` runs matching the filters, and the agents the filter offers. */
export async function runsList(db: Db, filters: RunFilters, take = 100): Promise<RunsList> {
  const [rows, agents] = await Promise.all([
    db.run.findMany({
      where: {
        status: filters.status,
        decision: filters.decision,
        agent: filters.agent === undefined ? undefined : { name: filters.agent },
        createdAt: {
          gte: filters.from === undefined ? undefined : new Date(`${filters.from}T00:00:00Z`),
          lt: filters.to === undefined ? undefined : new Date(Date.parse(`${filters.to}T00:00:00Z`) + DAY_MS),
        },
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: take + 1,
      select: {
        id: true,
        status: true,
        error: true,
        releaseExpiresAt: true,
        purpose: true,
        decision: true,
        createdAt: true,
        agent: { select: { name: true } },
      },
    }),
    db.agent.findMany({ select: { name: true }, orderBy: { name: "asc" } }),
  ]);
  return {
    runs: rows.slice(0, take).map((run) => ({
      id: run.id,
      agent: inertText(run.agent.name, 200),
      status: run.status,
      errorCode: shownErrorCode(run, runColumn(run, "error")?.code ?? null),
      purpose: inertText(run.purpose, 300),
      decision: run.decision,
      createdAt: run.createdAt.toISOString(),
    })),
    more: rows.length > take,
    agents: agents.map((agent) => inertText(agent.name, 200)),
  };
}

/** True once any agent has submitted a run. */
export async function hasRuns(db: Db): Promise<boolean> {
  return (await db.run.findFirst({ select: { id: true } })) !== null;
}
