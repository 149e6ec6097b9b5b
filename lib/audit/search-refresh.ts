/**
 * refreshSearchDocuments(db, which): builds every search document runs are owed, through the
 * database's airlock_search_refresh() (migration 20261203054804_search_built_after_the_run),
 * BATCH runs per statement, and returns how many it built. buildSearchDocuments(db, which, max)
 * builds at most `max` in one statement: the background's step, so a backlog of any size never
 * holds its pass (or a process's shutdown) for longer than one small batch.
 *
 * No write on a run's own clock builds its document: an insert, the end of `running` and any change
 * to what the document covers leave it owed (NULL). Guarantees: every text search and run export
 * builds every owed document before it reads (lib/audit/search.ts, lib/audit/export.ts), so it
 * never misses a run; running processes build the documents of runs neither queued nor running in
 * the background (lib/audit/sequencer.ts), so the cost is rarely a reader's and never held against
 * a row an executor is about to write. With nothing owed it costs one index probe.
 */
import type { PrismaClient } from "@/lib/generated/prisma/client";

/** Runs built per statement. */
export const BATCH = 500;

/** "all": every owed document (a reader's); "settled": those of runs neither queued nor running (the background's). */
export type OwedDocuments = "all" | "settled";

type Queries = Pick<PrismaClient, "$queryRaw">;

export async function refreshSearchDocuments(db: Queries, which: OwedDocuments): Promise<number> {
  let total = 0;
  for (;;) {
    const built = await buildSearchDocuments(db, which, BATCH);
    total += built;
    if (built < BATCH) return total;
  }
}

/** Builds at most `max` (1 to 10,000) owed documents in one statement; fewer than `max` means none are left owed. */
export async function buildSearchDocuments(db: Queries, which: OwedDocuments, max: number): Promise<number> {
  const [row] = await db.$queryRaw<{ built: number }[]>`SELECT "airlock_search_refresh"(${max}::integer, ${which === "all"}) AS built`;
  return row?.built ?? 0;
}
