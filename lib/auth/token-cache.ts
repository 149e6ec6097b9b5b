/**
 * Agent tokens as accepted, remembered in this process so the MCP door does not read a token and
 * its agent again on every request (authenticateAgentToken, ./agents.ts).
 *
 * Guarantees (those of lib/db/remembered.ts memoryUntilAnnounced, on its own channel):
 * - an entry is used only while this process listens on `airlock_auth_changed`
 *   (lib/db/listener.ts), on which PostgreSQL announces, when it commits, every update of a token
 *   other than its last use and every update of an agent, and every deleted row of either
 *   (migration 20261205214328_auth_changed_notify). Any announcement, forged ones included,
 *   forgets every entry; so does losing the connection, and nothing is remembered until it is back;
 * - a read that began before an announcement is not remembered (the epoch is taken before the
 *   read): a row read just before a revocation committed is used by that request only;
 * - an entry is used at most MAX_AGE_MS after it was read, never at or past the token's expiry,
 *   and only for the token it was read for (keyed by the token's sha256);
 * - only accepted tokens are remembered, at most 10,000 (the oldest forgotten first): a refused
 *   token is read every time.
 *
 * A change made elsewhere is seen here when its announcement arrives, milliseconds after its
 * commit; a request that started before then may still be served as before it.
 */
import type { Actor } from "@/lib/contracts/scopes";
import { memoryUntilAnnounced, type Epoch } from "@/lib/db/remembered";

const AUTH_CHANNEL = "airlock_auth_changed";
export { MAX_AGE_MS } from "@/lib/db/remembered";

export type AcceptedToken = {
  actor: Extract<Actor, { type: "agent" }>;
  tokenId: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
};

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
  const memory = memoryUntilAnnounced<AcceptedToken>({
    connectionString,
    channel: AUTH_CHANNEL,
    applicationName: "airlock-auth-changes",
    whileDown: "every token is read at every request until it is back",
  });
  return {
    recall(tokenHash, now) {
      const token = memory.get(tokenHash, now.getTime());
      if (!token?.expiresAt || token.expiresAt > now) return token;
      memory.delete(tokenHash);
      return undefined;
    },
    epoch: () => memory.epoch(),
    remember: (since, tokenHash, token) => memory.set(since, tokenHash, token),
    close: () => memory.close(),
  };
}
