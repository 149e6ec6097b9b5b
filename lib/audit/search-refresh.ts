/**
 * refreshSearchDocuments(db, which): builds the search documents runs are owed, through the
 * database's airlock_search_refresh() (migration 20261203054804_search_built_after_the_run),
 * BATCH runs per statement, and returns how many it built.
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

export async function refreshSearchDocuments(db: Pick<PrismaClient, "$queryRaw">, which: OwedDocuments): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await db.$queryRaw<{ built: number }[]>`SELECT "airlock_search_refresh"(${BATCH}::integer, ${which === "all"}) AS built`;
    const built = row?.built ?? 0;
    total += built;
    if (built < BATCH) return total;
  }
}
