/**
 * Copying untrusted JSON-like values (RPC frames, tool results, script results) into plain data.
 *
 * Guarantees: the copy contains only null, booleans, finite numbers, strings, arrays and
 * null-prototype objects; it is no deeper than `maxDepth` and has no more than `maxNodes` nodes;
 * a `__proto__` key is an ordinary own data property (never a prototype switch); an object
 * property whose value is undefined is left out, as JSON.stringify does. Refused: accessors
 * (never called), class instances, arrays that are not plain or have holes, functions, symbols,
 * bigints, undefined elsewhere, non-finite numbers and cycles (a value shared by two branches is
 * copied twice). Only own enumerable string keys are read. Refusals throw SafeJsonError, whose
 * message names where (keys with credentials redacted, then cut to 64 characters) but never quotes
 * a value.
 *
 * About as fast as JSON.stringify then JSON.parse of the same value: the place of a refusal is
 * spelled out only when there is one.
 */
import { redactSecrets } from "./secrets";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export class SafeJsonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SafeJsonError";
  }
}

export type SafeJsonLimits = { maxDepth: number; maxNodes: number };

export const DEFAULT_SAFE_JSON_LIMITS: SafeJsonLimits = { maxDepth: 64, maxNodes: 1_000_000 };

const getPrototypeOf = Object.getPrototypeOf;
const ownDescriptor = Object.getOwnPropertyDescriptor;

export function toSafeJson(value: unknown, limits: SafeJsonLimits = DEFAULT_SAFE_JSON_LIMITS): JsonValue {
  let nodes = 0;
  /** The objects being copied, from the root down: one met again is a cycle (a shared one is not). */
  const open = new Set<object>();
  /** Where the copy is, spelled out only for an error message. */
  const keys: (string | number)[] = [];
  // A key may be a credential: redacted whole before it is cut, so no part of one is quoted.
  const where = () => (keys.length === 0 ? "value" : keys.map((k) => (typeof k === "number" ? `[${k}]` : `.${redactSecrets(k).text.slice(0, 64)}`)).join(""));

  const copy = (v: unknown, depth: number): JsonValue => {
    if (++nodes > limits.maxNodes) throw new SafeJsonError(`value has more than ${limits.maxNodes} nodes`);
    if (typeof v === "string" || typeof v === "boolean" || v === null) return v;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new SafeJsonError(`${where()} is not a finite number`);
      return v;
    }
    if (typeof v !== "object") throw new SafeJsonError(`${where()} is a ${typeof v}, not JSON`);
    if (depth >= limits.maxDepth) throw new SafeJsonError(`value is nested deeper than ${limits.maxDepth}`);
    if (open.has(v)) throw new SafeJsonError(`${where()} is cyclic`);
    open.add(v);
    let out: JsonValue;
    if (Array.isArray(v)) {
      if (getPrototypeOf(v) !== Array.prototype) throw new SafeJsonError(`${where()} is not a plain array`);
      const items: JsonValue[] = new Array<JsonValue>(v.length);
      for (let i = 0; i < v.length; i++) {
        const slot = ownDescriptor(v, i);
        keys.push(i);
        if (!slot || !("value" in slot)) throw new SafeJsonError(`${where()} is ${slot ? "an accessor" : "a hole"}`);
        items[i] = copy(slot.value, depth + 1);
        keys.pop();
      }
      out = items;
    } else {
      const proto = getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw new SafeJsonError(`${where()} is not a plain object`);
      // Null-prototype: assigning `__proto__` defines an own data property (no setter is inherited).
      const fields = Object.create(null) as { [key: string]: JsonValue };
      for (const key of Object.keys(v)) {
        const slot = ownDescriptor(v, key)!;
        keys.push(key);
        if (!("value" in slot)) throw new SafeJsonError(`${where()} is an accessor`);
        if (slot.value !== undefined) fields[key] = copy(slot.value, depth + 1);
        keys.pop();
      }
      out = fields;
    }
    open.delete(v);
    return out;
  };
  return copy(value, 0);
}

/** JSON.parse, then toSafeJson. JSON.parse itself defines `__proto__` as an own property. */
export function parseSafeJson(text: string, limits: SafeJsonLimits = DEFAULT_SAFE_JSON_LIMITS): JsonValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SafeJsonError("not valid JSON");
  }
  return toSafeJson(parsed, limits);
}
