/**
 * Text PostgreSQL cannot store: U+0000 (refused in `text` and `jsonb`) and lone UTF-16 surrogates
 * (refused in `jsonb`, because JSON.stringify writes them as `\udXXX` escapes). Any string from an
 * agent, a script or an upstream can carry either, and a write that fails on them once left a run
 * `running` forever. Two rules, each applied in one place:
 *
 * - agent input is refused, never repaired: `unstorableCharacter` names the first offending
 *   character so intake can answer InvalidParams naming the field (lib/intake/submit.ts);
 * - content produced by a script or an upstream is normalized: `normalizeContent` replaces every
 *   lone surrogate and U+0000 with U+FFFD in every string and every object key, and says whether it
 *   changed anything (the run's envelope then carries the flag `content_normalized`). The
 *   executor applies it to results, logs, errors, tool arguments and tool results before anything
 *   is stored, sealed (digested) or returned; an upstream still receives the original arguments.
 *   An own `__proto__` key is data to PostgreSQL, but Prisma drops it from every JSON column it
 *   writes, so the stored run and the agent's answer lost it without a trace: it becomes
 *   `\ufffd__proto__`, flagged like any other normalization (if the object also has that key, the
 *   later of the two wins).
 */

import type { z } from "zod";
import { AppError } from "@/lib/errors";

// A high surrogate not followed by a low one, a low surrogate not preceded by a high one, or NUL.
const UNSTORABLE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]|\u0000/g;
const UNSTORABLE_TEST = new RegExp(UNSTORABLE.source);

export const CONTENT_NORMALIZED_FLAG = "content_normalized";

/** The first character PostgreSQL would refuse, as "U+XXXX", or null. */
export function unstorableCharacter(text: string): string | null {
  const match = UNSTORABLE_TEST.exec(text);
  if (!match) return null;
  return `U+${match[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

const REFUSED = "which cannot be stored; remove it (lone surrogate halves and NUL are refused)";

/** The refusal of agent input holding an unstorable character, naming the field (InvalidParams at the MCP door). */
export function unstorableRefusal(bad: { path: string; character: string }): AppError {
  return new AppError("bad_request", `${bad.path}: contains ${bad.character}, ${REFUSED}.`, { details: { field: bad.path, character: bad.character } });
}

/** A zod refinement refusing a string PostgreSQL cannot store, for schemas of agent input. */
export function storableText(text: string, ctx: z.RefinementCtx): void {
  const character = unstorableCharacter(text);
  if (character) ctx.addIssue({ code: "custom", message: `contains ${character}, ${REFUSED}` });
}

/** The path ("inputs.2", "provenance.prompt") of the first string in `value` holding an unstorable character. */
export function findUnstorable(value: unknown, path: string): { path: string; character: string } | null {
  if (typeof value === "string") {
    const character = unstorableCharacter(value);
    return character ? { path, character } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorable(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === "object") {
    for (const [key, v] of Object.entries(value)) {
      const character = unstorableCharacter(key);
      if (character) return { path: `${path} (a key)`, character };
      const found = findUnstorable(v, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

export type Normalized<T> = { value: T; changed: boolean };

export function normalizeText(text: string): Normalized<string> {
  if (!UNSTORABLE_TEST.test(text)) return { value: text, changed: false };
  return { value: text.replace(UNSTORABLE, "\ufffd"), changed: true };
}

/** An object key as it can be stored: normalized, and `__proto__` (which Prisma drops) renamed. */
function normalizeKey(key: string): Normalized<string> {
  const normalized = normalizeText(key);
  return normalized.value === "__proto__" ? { value: "\ufffd__proto__", changed: true } : normalized;
}

/**
 * A copy of a JSON-like value with every string and key normalized. Objects come back with a null
 * prototype (the input is hostile; see lib/sandbox/safe-json.ts). Values that are not JSON
 * (undefined, functions) are returned as they are: callers pass parsed JSON.
 */
export function normalizeContent<T>(value: T): Normalized<T> {
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const n = normalizeText(v);
      changed ||= n.changed;
      return n.value;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === "object") {
      const out = Object.create(null) as Record<string, unknown>;
      for (const [key, inner] of Object.entries(v)) {
        const k = normalizeKey(key);
        changed ||= k.changed;
        out[k.value] = walk(inner);
      }
      return out;
    }
    return v;
  };
  const result = walk(value) as T;
  return { value: result, changed };
}
