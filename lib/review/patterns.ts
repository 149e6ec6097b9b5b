/**
 * Patterns: runs grouped by structural fingerprint (lib/script-fingerprint.ts), the scripts agents
 * keep writing with other values, as candidates for a reviewed skill. The one service behind the
 * console's Patterns page and `airlock skills patterns`.
 *
 * listPatterns(db, actor, options) needs `patterns:read` (admins and reviewers) and returns the
 * groups of at least `minRuns` runs (default 2), sorted by the review time they cost — the sum,
 * over their reviewed runs, of the last verdict's time minus the run's submission — then by size.
 * Each group: its count, success rate (succeeded of the runs that ended), agents, first and last
 * use, the holes whose literal differs between runs (their position in the script, type, distinct
 * count and up to five values, most used first, read from the newest HOLE_SAMPLE runs) and up to
 * three example runs, newest first.
 *
 * The grouping reads an index of the columns it needs (migration
 * 20261203170844_patterns_without_reading_every_run), not the wide run rows.
 *
 * Runs stored before fingerprints existed are fingerprinted first, BACKFILL_BATCH per call
 * (`backfilled` says how many); a run whose code retention purged has none and is in no pattern.
 * The listing is audited (`patterns.listed`): the holes are literals from agents' code.
 */
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
import { Prisma } from "@/lib/generated/prisma/client";
import { fingerprintScript, type Hole } from "@/lib/script-fingerprint";

export const BACKFILL_BATCH = 2_000;
const HOLE_SAMPLE = 200;
const MAX_PATTERNS = 100;

export type PatternHole = { index: number; type: Hole["type"]; distinct: number; values: string[] };

export type Pattern = {
  fingerprint: string;
  count: number;
  /** Succeeded runs over the runs that ended; null while none has. */
  successRate: number | null;
  agents: string[];
  firstAt: string;
  lastAt: string;
  /** Seconds between submission and the last verdict, summed over the reviewed runs. */
  reviewSeconds: number;
  holes: PatternHole[];
  exampleRunIds: string[];
};

export type PatternList = { patterns: Pattern[]; backfilled: number };

/** Fingerprints up to BACKFILL_BATCH runs that have none; returns how many. */
async function backfill(db: Db): Promise<number> {
  const runs = await db.run.findMany({
    where: { fingerprint: null, code: { not: "" } },
    select: { id: true, code: true, language: true, capabilitySet: true },
    orderBy: { createdAt: "desc" },
    take: BACKFILL_BATCH,
  });
  for (const run of runs) {
    const capabilities = Array.isArray(run.capabilitySet) ? run.capabilitySet.filter((c): c is string => typeof c === "string") : [];
    const { fingerprint, holes } = fingerprintScript(run.code, run.language, capabilities);
    await db.run.updateMany({ where: { id: run.id, fingerprint: null }, data: { fingerprint, fingerprintHoles: holes } });
  }
  return runs.length;
}

export function varyingHoles(samples: unknown[]): PatternHole[] {
  const lists = samples.filter((h): h is Hole[] => Array.isArray(h));
  const first = lists[0];
  if (!first) return [];
  const out: PatternHole[] = [];
  first.forEach((hole, index) => {
    const counts = new Map<string, number>();
    for (const list of lists) {
      const value = list[index]?.value;
      if (typeof value === "string") counts.set(value, (counts.get(value) ?? 0) + 1);
    }
    if (counts.size < 2) return;
    const values = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([value]) => value);
    out.push({ index, type: hole.type, distinct: counts.size, values: values.slice(0, 5) });
  });
  return out;
}

type GroupRow = {
  fingerprint: string;
  count: number;
  succeeded: number;
  ended: number;
  agents: string[];
  firstAt: Date;
  lastAt: Date;
  reviewSeconds: number;
  examples: string[];
};

/**
 * The groups of at least `minRuns` runs, as listPatterns reads them (exported for its plan's test).
 * The counts stream through Run_patterns_idx in (fingerprint, agent) order without a sort or a join;
 * review time joins only the reviewed runs; the agents' names and the examples are read for the
 * MAX_PATTERNS groups shown, the examples through the (fingerprint, createdAt) index.
 */
export function groupsQuery(minRuns: number): Prisma.Sql {
  return Prisma.sql`
    WITH per_agent AS (
      SELECT r.fingerprint, r."agentId",
             count(*) AS n,
             count(*) FILTER (WHERE r.status = 'succeeded') AS succeeded,
             count(*) FILTER (WHERE r.status::text = ANY(${[...TERMINAL_STATUSES]}::text[])) AS ended,
             min(r."createdAt") AS "firstAt",
             max(r."createdAt") AS "lastAt"
      FROM "Run" r
      WHERE r.fingerprint IS NOT NULL
      GROUP BY r.fingerprint, r."agentId"
    ), groups AS (
      SELECT fingerprint, sum(n)::int AS count, sum(succeeded)::int AS succeeded, sum(ended)::int AS ended,
             min("firstAt") AS "firstAt", max("lastAt") AS "lastAt", array_agg("agentId") AS "agentIds"
      FROM per_agent
      GROUP BY fingerprint
      HAVING sum(n) >= ${minRuns}
    ), reviewed AS (
      -- Each reviewed run's last verdict, less its submission.
      SELECT r.fingerprint, sum(extract(epoch FROM v.decided - r."createdAt")) AS seconds
      FROM (SELECT rv."runId", max(rv."createdAt") AS decided FROM "Review" rv GROUP BY rv."runId") v
      JOIN "Run" r ON r.id = v."runId"
      WHERE r.fingerprint IS NOT NULL
      GROUP BY r.fingerprint
    ), shown AS (
      SELECT g.*, coalesce(rv.seconds, 0)::float8 AS "reviewSeconds"
      FROM groups g LEFT JOIN reviewed rv ON rv.fingerprint = g.fingerprint
      ORDER BY "reviewSeconds" DESC, g.count DESC, g."lastAt" DESC
      LIMIT ${MAX_PATTERNS}
    )
    SELECT s.fingerprint, s.count, s.succeeded, s.ended, s."firstAt", s."lastAt", s."reviewSeconds",
           (SELECT array_agg(a.name ORDER BY a.name) FROM "Agent" a WHERE a.id = ANY(s."agentIds")) AS agents,
           (SELECT array_agg(e.id::text ORDER BY e."createdAt" DESC, e.id DESC)
              FROM (SELECT x.id, x."createdAt" FROM "Run" x WHERE x.fingerprint = s.fingerprint
                    ORDER BY x."createdAt" DESC, x.id DESC LIMIT 3) e) AS examples
    FROM shown s
    ORDER BY s."reviewSeconds" DESC, s.count DESC, s."lastAt" DESC`;
}

export async function listPatterns(db: Db, actor: Actor, options: { minRuns?: number } = {}): Promise<PatternList> {
  requireScope(actor, "patterns:read");
  const minRuns = Math.max(1, Math.floor(options.minRuns ?? 2));
  const backfilled = await backfill(db);
  const groups = await db.$queryRaw<GroupRow[]>(groupsQuery(minRuns));
  const patterns: Pattern[] = [];
  for (const group of groups) {
    const samples = await db.run.findMany({
      where: { fingerprint: group.fingerprint },
      select: { fingerprintHoles: true },
      orderBy: { createdAt: "desc" },
      take: HOLE_SAMPLE,
    });
    patterns.push({
      fingerprint: group.fingerprint,
      count: group.count,
      successRate: group.ended > 0 ? Number((group.succeeded / group.ended).toFixed(3)) : null,
      agents: group.agents,
      firstAt: group.firstAt.toISOString(),
      lastAt: group.lastAt.toISOString(),
      reviewSeconds: Math.round(group.reviewSeconds),
      holes: varyingHoles(samples.map((s) => s.fingerprintHoles)),
      exampleRunIds: group.examples,
    });
  }
  await db.$transaction((tx) =>
    recordAudit(tx, { actor, action: "patterns.listed", subject: { type: "patterns" }, data: { patterns: patterns.length, minRuns, backfilled } }),
  );
  return { patterns, backfilled };
}
