/**
 * Run changes pushed by PostgreSQL, so a wait for a run (get_run's waitSeconds, submit_run's short
 * wait) ends when the run changes instead of at the next poll. A trigger announces every change of
 * a run's status on the channel `airlock_run_changed`, with the run's id, when its transaction
 * commits, whichever process made it (migration 20261202160000_run_changed_notify). One listening
 * connection per process serves every wait.
 *
 * Guarantees:
 * - a wait armed before the caller reads the run ends on any change committed after it was armed,
 *   so read-then-wait misses nothing;
 * - a push only wakes: the caller reads the run again, so a stray or forged notification (any role
 *   can NOTIFY) costs a read and changes no answer;
 * - the one exception is `handOver`: the process that ended a run's execution hands its waiters the
 *   row its own transaction wrote, once that transaction committed (the executor, through
 *   afterCommit), so a wait in the same process ends without the push and the read. It is a call
 *   in the process, never a message anyone else can send, and a wait it ends gets the row as
 *   committed then;
 * - nothing is missed while the connection is down: waits poll every POLL_MS until it is back,
 *   every wait is woken when it comes back, and even while it is up a wait reads again at least
 *   every SAFETY_MS;
 * - the connection (lib/db/listener.ts) opens at once; a lost one is reopened with backoff (up to
 *   5 s); `close` ends it and every wait.
 */
import { listen } from "@/lib/db/listener";
import type { Run } from "@/lib/generated/prisma/client";

export const CHANNEL = "airlock_run_changed";
/** How often a wait reads again while no push can arrive. */
export const POLL_MS = 250;
/** How often a wait reads again while pushes arrive: a bound, not the expected path. */
export const SAFETY_MS = 5_000;

export type ArmedWait = {
  /**
   * Resolves on a change of the run, after `ms`, or on `signal`, whichever is first: with the row
   * when this process handed it over (`handOver`), else with null (read the run again).
   */
  wait(ms: number, signal?: AbortSignal): Promise<Run | null>;
  /** Disarms a wait that will not be waited for. */
  cancel(): void;
};

export type RunChanges = {
  /** Arms a wait for the run's next change; call it before reading the run. */
  arm(runId: string): ArmedWait;
  /** Ends the waits for `run` with its row; call only once the transaction that wrote it committed. */
  handOver(run: Run): void;
  close(): Promise<void>;
};

export function listenRunChanges(connectionString: string): RunChanges {
  const waiters = new Map<string, Set<(run: Run | null) => void>>();
  const wakeAll = () => {
    for (const set of waiters.values()) for (const wake of set) wake(null);
  };
  // The pushes missed while it was down are made up for: every wait reads again when it is lost and when it is back.
  const listener = listen(
    { connectionString, channel: CHANNEL, applicationName: "airlock-run-changes", whileDown: "waits poll until it is back" },
    {
      onNotification(runId) {
        for (const wake of waiters.get(runId) ?? []) wake(null);
      },
      onUp: wakeAll,
      onDown: wakeAll,
    },
  );

  return {
    arm(id) {
      // Notifications carry the id as PostgreSQL prints a uuid: lower case.
      const runId = id.toLowerCase();
      let wake!: (run: Run | null) => void;
      const changed = new Promise<Run | null>((resolve) => (wake = resolve));
      const set = waiters.get(runId) ?? new Set();
      set.add(wake);
      waiters.set(runId, set);
      const disarm = () => {
        set.delete(wake);
        if (set.size === 0 && waiters.get(runId) === set) waiters.delete(runId);
      };
      return {
        async wait(ms, signal) {
          let timer: NodeJS.Timeout | undefined;
          let onAbort: (() => void) | undefined;
          try {
            return await Promise.race([
              changed,
              new Promise<null>((resolve) => {
                timer = setTimeout(() => resolve(null), Math.max(0, Math.min(ms, listener.listening() ? SAFETY_MS : POLL_MS)));
                onAbort = () => resolve(null);
                signal?.addEventListener("abort", onAbort, { once: true });
              }),
            ]);
          } finally {
            clearTimeout(timer);
            if (onAbort) signal?.removeEventListener("abort", onAbort);
            disarm();
          }
        },
        cancel: disarm,
      };
    },
    handOver(run) {
      for (const wake of waiters.get(run.id.toLowerCase()) ?? []) wake(run);
    },
    async close() {
      const closing = listener.close();
      wakeAll();
      await closing;
    },
  };
}
