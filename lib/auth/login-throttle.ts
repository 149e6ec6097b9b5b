/**
 * The password sign-in throttle: growing delays instead of a lockout, so a stranger's guesses slow
 * down the stranger, not the person whose account they guess at.
 *
 * Two keys are counted from "LoginAttempt" rows: the account at one client address (email and
 * address), and the address alone (any account). A key's failures are those since its last
 * success and within the last 24 hours. With n of them, the next attempt is allowed delay(n) after
 * the latest one:
 *
 *   delay(n) = 0 while n < F, then min(2^(n − F) seconds, W)
 *
 * where F is AIRLOCK_LOGIN_MAX_FAILURES (default 3) for the account at an address and 3·F for the
 * address, and W is AIRLOCK_LOGIN_WINDOW_MINUTES (default 15 minutes). With the defaults, the 3rd
 * failure costs 1 s, the 4th 2 s, the 5th 4 s, …, from the 13th on 15 minutes each.
 *
 * Guarantees: the account's owner at another address is not delayed by a stranger's failures; an
 * address guessing at many accounts is slowed across all of them. Refuses: nothing by itself —
 * it says whether and for how long an attempt must wait; the caller refuses it without checking
 * the password, and does not count the refusal as a failure.
 */
import type { Tx } from "@/lib/db";
import { env } from "@/lib/env";

const HORIZON_MS = 24 * 60 * 60_000;
const ADDRESS_FACTOR = 3;

/** How long the next attempt waits after the latest of `failures` failures. */
export function throttleDelayMs(failures: number, freeFailures: number, maxDelayMs: number): number {
  if (failures < freeFailures) return 0;
  return Math.min(2 ** Math.min(failures - freeFailures, 40) * 1000, maxDelayMs);
}

type Key = { email?: string; address: string | null };

async function waitFor(tx: Tx, key: Key, freeFailures: number, now: Date): Promise<number> {
  const since = new Date(now.getTime() - HORIZON_MS);
  const lastSuccess = await tx.loginAttempt.findFirst({
    where: { ...key, succeeded: true, at: { gt: since } },
    orderBy: { at: "desc" },
    select: { at: true },
  });
  const failures = await tx.loginAttempt.aggregate({
    where: { ...key, succeeded: false, at: { gt: lastSuccess?.at ?? since } },
    _count: { _all: true },
    _max: { at: true },
  });
  const latest = failures._max.at;
  if (!latest) return 0;
  const delay = throttleDelayMs(failures._count._all, freeFailures, env().AIRLOCK_LOGIN_WINDOW_MINUTES * 60_000);
  return Math.max(0, latest.getTime() + delay - now.getTime());
}

export type Throttle = { throttled: false } | { throttled: true; by: "account" | "address"; retryAfterSeconds: number };

/**
 * Whether an attempt for `email` from `address` must wait. Call it inside the transaction that
 * records the attempt, after `lockLoginKeys`, so parallel attempts are counted one at a time.
 */
export async function loginThrottle(tx: Tx, email: string, address: string | null, now: Date): Promise<Throttle> {
  const free = env().AIRLOCK_LOGIN_MAX_FAILURES;
  const account = await waitFor(tx, { email, address }, free, now);
  const byAddress = await waitFor(tx, { address }, free * ADDRESS_FACTOR, now);
  const wait = Math.max(account, byAddress);
  if (wait === 0) return { throttled: false };
  return { throttled: true, by: account >= byAddress ? "account" : "address", retryAfterSeconds: Math.ceil(wait / 1000) };
}

/** Transaction-scoped locks on both keys, always the account's first, so two attempts never wait on each other in a cycle. */
export async function lockLoginKeys(tx: Tx, email: string, address: string | null): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`login:${email}`}))`;
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`login-address:${address ?? "unknown"}`}))`;
}
