/**
 * Rejected bearer tokens on /api/mcp, audited without letting an attacker flood the audit chain.
 *
 * Each rejected token (unknown, revoked, expired, or not shaped like an agent token) counts
 * against a key: its first 10 characters — `alk_` and 6 more, the same prefix the Agents page
 * shows — or `malformed` for anything not shaped like an agent token (no fragment of a foreign
 * secret is ever written). The event is `auth.token_rejected`, actor `system:auth`, subject
 * `{type: "token_prefix", id: prefix}`, data `{prefix, reason, attempts, since}`: `attempts`
 * rejections for that prefix since `since`; `reason` (unknown, revoked, agent_revoked, expired,
 * malformed) is looked up for the token that wrote the event — counted-only attempts are not
 * looked up, so a flush repeats the prefix's last reason. Never the token, never its hash.
 *
 * Bounds, per process, per UTC minute:
 * - at most one event per prefix: the first rejection of a prefix in a minute writes at once;
 *   later ones in that minute are counted in memory, and the count is written by that prefix's
 *   next event — the next minute's first rejection, or the flush that runs after the minute ends
 *   when the prefix went quiet;
 * - at most GLOBAL_CAP events for all prefixes together; rejections past the cap are counted and
 *   written as one `auth.token_rejected` event with prefix `*` (reason `over_cap`) by a later flush;
 * - memory: only prefixes that were written (≤ GLOBAL_CAP a minute) are remembered, and quiet
 *   ones are forgotten after a minute.
 * So a flood costs at most GLOBAL_CAP + 1 appends a minute however many tokens it tries.
 * Several web processes each keep their own bounds.
 */
import { recordAudit } from "@/lib/audit/record";
import { prisma, type Db } from "@/lib/db";
import { hashAgentToken, looksLikeAgentToken } from "./tokens";

export const GLOBAL_CAP = 60;
const MINUTE = 60_000;
const SYSTEM_AUTH = { type: "system", name: "auth" } as const;

export type RejectionReason = "unknown" | "revoked" | "agent_revoked" | "expired" | "malformed";

/** Rejections counted but not yet written: how many, since when, in which minute the newest. */
type Counted = { attempts: number; since: number; window: number };
type PrefixState = { lastWritten: number; reason: string; counted: Counted | null };

export type TokenRejectionLog = {
  /** Counts one rejected token and writes its event when the bounds allow. Never throws. */
  reject(token: string): Promise<void>;
  /** Writes what was counted in minutes that have ended (also run by a timer). Never throws. */
  flush(): Promise<void>;
  /** Stops the timer. */
  stop(): void;
};

export function tokenPrefix(token: string): string {
  return looksLikeAgentToken(token) ? token.slice(0, 10) : "malformed";
}

async function reasonFor(db: Db, token: string): Promise<RejectionReason> {
  if (!looksLikeAgentToken(token)) return "malformed";
  const row = await db.agentToken.findUnique({
    where: { tokenHash: hashAgentToken(token) },
    select: { revokedAt: true, expiresAt: true, agent: { select: { revokedAt: true } } },
  });
  if (!row) return "unknown";
  if (row.agent.revokedAt) return "agent_revoked";
  if (row.revokedAt) return "revoked";
  if (row.expiresAt && row.expiresAt <= new Date()) return "expired";
  return "unknown"; // valid by now (a race with its creation): nothing better to say
}

function count(counted: Counted | null, at: number, window: number): Counted {
  return counted ? { attempts: counted.attempts + 1, since: counted.since, window } : { attempts: 1, since: at, window };
}

export function createTokenRejectionLog(options: { db: () => Db; now?: () => number; cap?: number; timer?: boolean }): TokenRejectionLog {
  const now = options.now ?? Date.now;
  const cap = options.cap ?? GLOBAL_CAP;
  const useTimer = options.timer ?? true;
  const prefixes = new Map<string, PrefixState>();
  let overCap: Counted | null = null;
  let capWindow = -1;
  let writtenInWindow = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const windowOf = (at: number) => Math.floor(at / MINUTE);
  /** Takes one of the minute's `cap` slots; synchronous, so concurrent requests cannot overshoot. */
  const takeSlot = (window: number): boolean => {
    if (window !== capWindow) {
      capWindow = window;
      writtenInWindow = 0;
      for (const [prefix, state] of prefixes) if (!state.counted && state.lastWritten < window - 1) prefixes.delete(prefix);
    }
    if (writtenInWindow >= cap) return false;
    writtenInWindow++;
    return true;
  };

  const write = async (prefix: string, reason: string, attempts: number, since: number) => {
    try {
      await options.db().$transaction((tx) =>
        recordAudit(tx, {
          actor: SYSTEM_AUTH,
          action: "auth.token_rejected",
          subject: { type: "token_prefix", id: prefix },
          data: { prefix, reason, attempts, since: new Date(since).toISOString() },
        }),
      );
    } catch (error) {
      console.error("could not record auth.token_rejected", error);
    }
  };

  const schedule = () => {
    if (!useTimer || timer) return;
    const at = now();
    timer = setTimeout(
      () => {
        timer = null;
        void log.flush();
      },
      (windowOf(at) + 1) * MINUTE - at + 1_000,
    );
    timer.unref?.();
  };

  const log: TokenRejectionLog = {
    async reject(token) {
      const at = now();
      const window = windowOf(at);
      const prefix = tokenPrefix(token);
      const state = prefixes.get(prefix);
      if (state && state.lastWritten === window) {
        // This prefix was written this minute: count the attempt for its next event.
        state.counted = count(state.counted, at, window);
        schedule();
        return;
      }
      if (!takeSlot(window)) {
        overCap = count(overCap, at, window);
        schedule();
        return;
      }
      const carried = state?.counted ?? null;
      const entry: PrefixState = { lastWritten: window, reason: state?.reason ?? "unknown", counted: null };
      prefixes.set(prefix, entry);
      entry.reason = await reasonFor(options.db(), token).catch(() => entry.reason);
      await write(prefix, entry.reason, 1 + (carried?.attempts ?? 0), carried?.since ?? at);
    },

    async flush() {
      try {
        const window = windowOf(now());
        for (const [prefix, state] of prefixes) {
          if (state.counted && state.lastWritten < window && takeSlot(window)) {
            const { attempts, since } = state.counted;
            state.counted = null;
            state.lastWritten = window;
            await write(prefix, state.reason, attempts, since);
          } else if (!state.counted && state.lastWritten < window - 1) {
            prefixes.delete(prefix);
          }
        }
        if (overCap && overCap.window < window) {
          const { attempts, since } = overCap;
          overCap = null;
          await write("*", "over_cap", attempts, since);
        }
        if (overCap || [...prefixes.values()].some((state) => state.counted)) schedule();
      } catch (error) {
        console.error("flushing auth.token_rejected counts failed", error);
      }
    },

    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
  return log;
}

const cache = globalThis as typeof globalThis & { __airlockTokenRejections?: TokenRejectionLog };

/** The process-wide log /api/mcp reports rejected tokens to (cached on globalThis for Next's dev reloads). */
export function tokenRejections(): TokenRejectionLog {
  cache.__airlockTokenRejections ??= createTokenRejectionLog({ db: prisma });
  return cache.__airlockTokenRejections;
}
