/**
 * Agent bearer tokens: `alk_` + 32 random bytes (base64url). Only sha256(token) is stored;
 * the token is shown once at creation. Lookup is by hash, so comparison time does not depend on
 * how much of a guessed token was right.
 */
import { randomBytes } from "node:crypto";
import { sha256Hex } from "@/lib/digest";

export const TOKEN_PREFIX = "alk_";

export function generateAgentToken(): { token: string; tokenHash: string; prefix: string } {
  const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  return { token, tokenHash: hashAgentToken(token), prefix: token.slice(0, 10) };
}

export function hashAgentToken(token: string): string {
  return sha256Hex(token);
}

/** Cheap shape check before any database lookup. */
export function looksLikeAgentToken(value: string): boolean {
  return /^alk_[A-Za-z0-9_-]{43}$/.test(value);
}
