/**
 * One PostgreSQL connection that LISTENs on one channel and keeps listening: the transport of
 * everything PostgreSQL pushes to a process (run changes, lib/runs/run-changes.ts; the changes
 * that end what ./remembered.ts remembers: agents and their tokens, policy versions and skills).
 *
 * Guarantees:
 * - the connection opens at once; a lost one (an error, its end, a failed LISTEN) is reopened with
 *   backoff from 100 ms up to 5 s; one that died silently (a partition, a failover that reset
 *   nothing) is found by a ping every PING_MS that must be answered within PING_TIMEOUT_MS (the
 *   OS's keepAlive alone takes hours), so `listening()` is never true for long on a dead one;
 * - `onDown` is called when a listening connection is lost (or a connection attempt fails), before
 *   anything else; `onUp` once LISTEN succeeded, so notifications missed in between can be made up
 *   for there; `listening()` is true between the two;
 * - `onNotification` gets each payload on the channel, from whichever role sent it: any role can
 *   NOTIFY, so a handler may only wake or forget, never trust what a payload claims;
 * - one outage is logged once, not at every retry; `close` ends the connection and the retries.
 */
import pg from "pg";

const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5_000;
/** How often a listening connection is asked to answer, and how long it has to: one that does not is lost. */
export const PING_MS = 5_000;
export const PING_TIMEOUT_MS = 5_000;

export type ListenerHandlers = {
  onNotification(payload: string): void;
  onUp(): void;
  onDown(): void;
};

export type ListenerOptions = {
  connectionString: string;
  /** An SQL identifier written in code, never from input. */
  channel: string;
  /** The connection's application_name, and the prefix of its log line. */
  applicationName: string;
  /** What the process does while the connection is down, for the log line. */
  whileDown: string;
};

export type Listener = { listening(): boolean; close(): Promise<void> };

export function listen({ connectionString, channel, applicationName, whileDown }: ListenerOptions, handlers: ListenerHandlers): Listener {
  let client: pg.Client | null = null;
  let up = false;
  let failing = false;
  let closed = false;
  let backoff = FIRST_BACKOFF_MS;
  let retry: NodeJS.Timeout | null = null;
  let pinging: NodeJS.Timeout | null = null;
  const stopPinging = () => {
    if (pinging) clearInterval(pinging);
    pinging = null;
  };

  const schedule = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = null;
      void connect();
    }, backoff);
    retry.unref();
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
  };

  const connect = async () => {
    if (closed) return;
    const next = new pg.Client({ connectionString, application_name: applicationName, keepAlive: true });
    const lost = () => {
      if (client !== next) return;
      client = null;
      up = false;
      stopPinging();
      // A connection that stopped answering may never finish a polite end: its socket is destroyed.
      (next as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      next.end().catch(() => undefined);
      handlers.onDown();
      schedule();
    };
    next.on("error", lost);
    next.on("end", lost);
    next.on("notification", (message) => {
      if (message.channel === channel) handlers.onNotification(message.payload ?? "");
    });
    client = next;
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
      if (client !== next || closed) return void next.end().catch(() => undefined);
      up = true;
      failing = false;
      backoff = FIRST_BACKOFF_MS;
      stopPinging();
      let awaiting = false;
      pinging = setInterval(() => {
        if (client !== next || awaiting) return;
        awaiting = true;
        const timeout = setTimeout(lost, PING_TIMEOUT_MS);
        timeout.unref();
        next.query("SELECT 1").then(
          () => {
            clearTimeout(timeout);
            awaiting = false;
          },
          () => {
            clearTimeout(timeout);
            lost();
          },
        );
      }, PING_MS);
      pinging.unref();
      handlers.onUp();
    } catch (error) {
      if (client !== next) return;
      if (!failing) console.error(`${applicationName}: listening failed (${error instanceof Error ? error.message : String(error)}); ${whileDown}`);
      failing = true;
      lost();
    }
  };

  void connect();
  return {
    listening: () => up,
    async close() {
      closed = true;
      stopPinging();
      if (retry) clearTimeout(retry);
      const current = client;
      client = null;
      up = false;
      await current?.end().catch(() => undefined);
    },
  };
}
