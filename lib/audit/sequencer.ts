/**
 * startAuditSequencer(db): a running process's background upkeep of the audit log, every
 * INTERVAL_MS: it chains staged audit events (lib/db/audit-sequence.ts) and builds the search
 * documents settled runs are owed (./search-refresh.ts), so both happen promptly even when nobody
 * reads the log. A failed pass loses nothing (the events stay staged, the documents owed, and any
 * reader does the work first); it is logged once per outage and retried at the next tick. `close`
 * waits for the pass under way.
 */
import type { Db } from "@/lib/db";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { refreshSearchDocuments } from "./search-refresh";

export const INTERVAL_MS = 100;

export function startAuditSequencer(db: Db): { close(): Promise<void> } {
  let failing = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const schedule = () => {
    if (closed) return;
    timer = setTimeout(tick, INTERVAL_MS);
    timer.unref();
  };
  const tick = () => {
    pass = sequenceAudit(db)
      .then(() => refreshSearchDocuments(db, "settled"))
      .then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          if (!failing)
            console.error(
              `audit: chaining staged events or building search documents failed (${error instanceof Error ? error.message : String(error)}); retrying`,
            );
          failing = true;
        },
      );
    void pass.then(schedule);
  };
  schedule();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await pass;
    },
  };
}
