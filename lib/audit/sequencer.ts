/**
 * startAuditSequencer(db): a running process's background upkeep of the audit log: it chains
 * staged audit events (lib/db/audit-sequence.ts) and builds the search documents settled runs are
 * owed (./search-refresh.ts), so both happen promptly even when nobody reads the log. A pass runs
 * AFTER_STAGING_MS after this process commits events (./record.ts onEventsStaged), and at least
 * every IDLE_MS for what other processes commit, so a quiet process does not query the database
 * ten times a second. A pass builds at most DOCUMENTS_PER_PASS documents; while more are owed the
 * next pass follows AFTER_STAGING_MS later, so a backlog of any size (a bulk import) is worked
 * off in small steps that never keep staged events waiting behind it. A failed pass loses nothing
 * (the events stay staged, the documents owed, and any reader does the work first); it is logged
 * once per outage and retried at the next tick. `close` waits for the pass under way, which is
 * one chaining and one small batch of documents at most.
 */
import type { Db } from "@/lib/db";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { onEventsStaged } from "./record";
import { buildSearchDocuments } from "./search-refresh";

/** How soon after this process commits events a pass chains them (batching what commits meanwhile). */
export const AFTER_STAGING_MS = 100;
/** The longest wait between passes, for what other processes commit. */
export const IDLE_MS = 1_000;
/** Search documents one pass builds at most (about 1 ms each for a small run). */
export const DOCUMENTS_PER_PASS = 100;

export function startAuditSequencer(db: Db): { close(): Promise<void> } {
  let failing = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  /** When the next pass is due (ms since the epoch); a pass under way has none. */
  let due: number | null = null;
  let pass: Promise<void> | null = null;
  /** Whether events were staged during the pass under way (they may have missed it), or documents are still owed after it. */
  let soon = false;
  const schedule = (ms: number) => {
    if (closed) return;
    const at = Date.now() + ms;
    if (due !== null && due <= at) return;
    clearTimeout(timer);
    due = at;
    timer = setTimeout(tick, ms);
    timer.unref();
  };
  const tick = () => {
    due = null;
    soon = false;
    pass = sequenceAudit(db)
      .then(() => buildSearchDocuments(db, "settled", DOCUMENTS_PER_PASS))
      .then(
        (built) => {
          failing = false;
          if (built === DOCUMENTS_PER_PASS) soon = true;
        },
        (error: unknown) => {
          if (!failing)
            console.error(
              `audit: chaining staged events or building search documents failed (${error instanceof Error ? error.message : String(error)}); retrying`,
            );
          failing = true;
        },
      )
      .then(() => {
        pass = null;
        schedule(soon ? AFTER_STAGING_MS : IDLE_MS);
      });
  };
  const unsubscribe = onEventsStaged(() => {
    if (pass) soon = true;
    else schedule(AFTER_STAGING_MS);
  });
  schedule(AFTER_STAGING_MS);
  return {
    async close() {
      closed = true;
      unsubscribe();
      clearTimeout(timer);
      await pass;
    },
  };
}
