/**
 * The digests verification (./verify.ts) recomputes, for values JSON.parse returned: byte for byte
 * lib/digest.ts `jsonDigest` and ./record.ts `chainHash`, faster.
 *
 * canonicalJson (lib/canonical-json.ts) is defined as JSON.stringify of a copy with sorted keys, and
 * writes that text in JavaScript, one JSON.stringify per string. Verification digests every stored
 * tool-call argument and result, every run's content and every event, all read back with JSON.parse,
 * so here the definition is computed as it is written: a copy of each object whose keys are out of
 * order, with its keys sorted (an object already in order, none of whose members was copied, is its
 * own copy), then one native JSON.stringify of the whole value (≈2.5× faster on the benchmark's
 * tool-call payloads, bench/audit.ts).
 *
 * Guarantees: for a value JSON.parse returned (only plain objects and arrays, strings, numbers,
 * booleans and null), `parsedCanonicalJson(value) === canonicalJson(value)`, and so for the digests;
 * verify-digest.test.ts checks it against canonicalJson for arbitrary JSON. Any other value (a Date,
 * undefined members, an object built by code with a toJSON) must go through canonicalJson. A
 * `__proto__` key is copied as an own member, as JSON.parse makes it, never as the prototype. While
 * Object.prototype or Array.prototype has a toJSON (which JSON.stringify calls and canonicalJson does
 * not), the text is canonicalJson's. An array's objects that share their key list are sorted once.
 */
import { canonicalJson } from "@/lib/canonical-json";
import { sha256Hex } from "@/lib/digest";
import type { ChainedFields } from "./record";

/** canonicalJson(value) for a value JSON.parse returned. */
export function parsedCanonicalJson(value: unknown): string {
  if ("toJSON" in Array.prototype) return canonicalJson(value);
  return JSON.stringify(sortedCopy(value ?? null));
}

/** jsonDigest(value) for a value JSON.parse returned. */
export function parsedJsonDigest(value: unknown): string {
  return sha256Hex(parsedCanonicalJson(value));
}

/** An event as verification reads it back: `at` as text (read with new Date, as chainHash's callers do), `data` as JSON.parse returned it. */
export type ParsedEvent = Omit<ChainedFields, "at"> & { at: string };

/**
 * The form Date.prototype.toISOString writes for the years 0000–9999, in which PostgreSQL's to_char
 * writes a stored time (./verify.ts fetchBatch). A real calendar time in this form (PostgreSQL writes
 * no other) is its own round trip through a Date; text like February 30th is not, and is hashed as
 * it is, so it matches no event chained through a Date.
 */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * chainHash(prevHash, {...event, at: new Date(event.at)}): the fields of record.ts canonicalEvent,
 * written in sorted order so that the event itself needs no sorted copy. A time already in
 * toISOString's form is hashed as it is (no Date made and written back, ≈0.8 s a million events),
 * so it must be the very text the event was chained with; a time in any other form goes through a Date.
 */
export function parsedChainHash(prevHash: string, event: ParsedEvent): string {
  const canonical = parsedCanonicalJson({
    action: event.action,
    actorId: event.actorId,
    actorType: event.actorType,
    at: ISO_TIME.test(event.at) ? event.at : new Date(event.at).toISOString(),
    data: event.data,
    subjectId: event.subjectId,
    subjectType: event.subjectType,
  });
  return sha256Hex(prevHash + canonical);
}

function sortedCopy(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  return Array.isArray(value) ? sortedItems(value) : sortedMembers(value as Record<string, unknown>, null);
}

/** The sorted order of the last key list an array's objects had: they mostly share their keys. */
type KeyOrder = { keys: string[]; sorted: string[]; inOrder: boolean };

function sortedItems(array: unknown[]): unknown[] {
  const order: KeyOrder = { keys: [], sorted: [], inOrder: true };
  let copy: unknown[] | null = null;
  for (let i = 0; i < array.length; i++) {
    const value = array[i];
    const item =
      typeof value === "object" && value !== null && !Array.isArray(value) ? sortedMembers(value as Record<string, unknown>, order) : sortedCopy(value);
    if (item !== value) copy ??= array.slice();
    if (copy) copy[i] = item;
  }
  return copy ?? array;
}

/**
 * Keys inserted in sorted order come out as the definition's copy: JavaScript lists array-index keys
 * first, ascending, whatever the insertion order, then the others as inserted. An object whose keys
 * already come out sorted lists them as that copy would.
 */
function sortedMembers(object: Record<string, unknown>, last: KeyOrder | null): Record<string, unknown> {
  const { sorted: keys, inOrder } = keyOrder(Object.keys(object), last);
  let copy: Record<string, unknown> | null = inOrder ? null : {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const member = sortedCopy(object[key]);
    if (!copy && member !== object[key]) {
      copy = {};
      for (let j = 0; j < i; j++) setMember(copy, keys[j]!, object[keys[j]!]);
    }
    if (copy) setMember(copy, key, member);
  }
  return copy ?? object;
}

/** The order of `keys`: `last`'s when they are its keys, otherwise sorted here (and kept in `last`). */
function keyOrder(keys: string[], last: KeyOrder | null): KeyOrder {
  if (last && sameKeys(keys, last.keys)) return last;
  let inOrder = true;
  for (let i = 1; i < keys.length && inOrder; i++) inOrder = keys[i - 1]! < keys[i]!;
  const order = { keys, sorted: inOrder ? keys : keys.slice().sort(), inOrder };
  if (last) Object.assign(last, order);
  return order;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Assigning `__proto__` would set the prototype; it is defined as an own member, as JSON.parse does. */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}
