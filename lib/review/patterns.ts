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
 * Runs stored before fingerprints existed are fingerprinted first, BACKFILL_BATCH per call
 * (`backfilled` says how many); a run whose code retention purged has none and is in no pattern.
 * The listing is audited (`patterns.listed`): the holes are literals from agents' code.
 */
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
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

export async function listPatterns(db: Db, actor: Actor, options: { minRuns?: number } = {}): Promise<PatternList> {
  requireScope(actor, "patterns:read");
  const minRuns = Math.max(1, Math.floor(options.minRuns ?? 2));
  const backfilled = await backfill(db);
  const groups = await db.$queryRaw<GroupRow[]>`
    SELECT r.fingerprint,
           count(*)::int AS count,
           (count(*) FILTER (WHERE r.status = 'succeeded'))::int AS succeeded,
           (count(*) FILTER (WHERE r.status::text = ANY(${[...TERMINAL_STATUSES]}::text[])))::int AS ended,
           array_agg(DISTINCT a.name ORDER BY a.name) AS agents,
           min(r."createdAt") AS "firstAt",
           max(r."createdAt") AS "lastAt",
           coalesce(sum(extract(epoch FROM v.decided - r."createdAt")), 0)::float8 AS "reviewSeconds",
           (array_agg(r.id::text ORDER BY r."createdAt" DESC))[1:3] AS examples
    FROM "Run" r
    JOIN "Agent" a ON a.id = r."agentId"
    LEFT JOIN LATERAL (SELECT max(rv."createdAt") AS decided FROM "Review" rv WHERE rv."runId" = r.id) v ON true
    WHERE r.fingerprint IS NOT NULL
    GROUP BY r.fingerprint
    HAVING count(*) >= ${minRuns}
    ORDER BY "reviewSeconds" DESC, count DESC, "lastAt" DESC
    LIMIT ${MAX_PATTERNS}`;
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
