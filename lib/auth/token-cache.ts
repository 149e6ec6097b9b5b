/**
 * Agent tokens as accepted, remembered in this process so the MCP door does not read a token and
 * its agent again on every request (authenticateAgentToken, ./agents.ts).
 *
 * Guarantees:
 * - an entry is used only while this process listens on `airlock_auth_changed`
 *   (lib/db/listener.ts), on which PostgreSQL announces, when it commits, every update of a token
 *   other than its last use and every update of an agent, and every deleted row of either
 *   (migration 20261205214328_auth_changed_notify). Any announcement, forged ones included,
 *   forgets every entry; so does losing the connection, and nothing is remembered until it is back;
 * - a read that began before an announcement is not remembered (the epoch is taken before the
 *   read): a row read just before a revocation committed is used by that request only;
 * - an entry is used at most MAX_AGE_MS after it was read, never at or past the token's expiry,
 *   and only for the token it was read for (keyed by the token's sha256);
 * - only accepted tokens are remembered, at most MAX_ENTRIES (the oldest forgotten first): a
 *   refused token is read every time.
 *
 * A change made elsewhere is seen here when its announcement arrives, milliseconds after its
 * commit; a request that started before then may still be served as before it.
 */
import type { Actor } from "@/lib/contracts/scopes";
import { listen } from "@/lib/db/listener";

export const AUTH_CHANNEL = "airlock_auth_changed";
export const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

export type AcceptedToken = {
  actor: Extract<Actor, { type: "agent" }>;
  tokenId: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
};

/** When a read began: the count of changes seen then, and the time. */
export type Epoch = { changes: number; at: number };

export type TokenCache = {
  /** The token accepted under this sha256, when remembered and still usable at `now` (the object remembered: its `lastUsedAt` may be updated). */
  recall(tokenHash: string, now: Date): AcceptedToken | undefined;
  /** Taken before reading a token: what `remember` needs. Null while nothing may be remembered. */
  epoch(): Epoch | null;
  /** Remembers a token read since `epoch`, unless anything changed since. */
  remember(since: Epoch | null, tokenHash: string, token: AcceptedToken): void;
  close(): Promise<void>;
};

export function listenTokenChanges(connectionString: string): TokenCache {
  const entries = new Map<string, { token: AcceptedToken; readAt: number }>();
  let changes = 0;
  const forget = () => {
    changes++;
    entries.clear();
  };
  const listener = listen(
    { connectionString, channel: AUTH_CHANNEL, applicationName: "airlock-auth-changes", whileDown: "every token is read at every request until it is back" },
    { onNotification: forget, onUp: forget, onDown: forget },
  );
  return {
    recall(tokenHash, now) {
      const entry = entries.get(tokenHash);
      if (!entry) return undefined;
      const { token, readAt } = entry;
      const usable = listener.listening() && now.getTime() - readAt < MAX_AGE_MS && (!token.expiresAt || token.expiresAt > now);
      if (!usable) entries.delete(tokenHash);
      return usable ? token : undefined;
    },
    epoch: () => (listener.listening() ? { changes, at: Date.now() } : null),
    remember(since, tokenHash, token) {
      if (since === null || since.changes !== changes || !listener.listening()) return;
      entries.delete(tokenHash);
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(tokenHash, { token, readAt: since.at });
    },
    async close() {
      await listener.close();
      forget();
    },
  };
}
