/**
 * Copying untrusted JSON-like values (RPC frames, tool results, script results) into plain data.
 *
 * Guarantees: the copy contains only null, booleans, finite numbers, strings, arrays and
 * null-prototype objects; it is no deeper than `maxDepth` and has no more than `maxNodes` nodes;
 * a `__proto__` key is an ordinary own data property (never a prototype switch); accessors,
 * class instances, functions, symbols and cycles are refused. Refusals throw SafeJsonError, whose
 * message never quotes the offending value.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export class SafeJsonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SafeJsonError";
  }
}

export type SafeJsonLimits = { maxDepth: number; maxNodes: number };

export const DEFAULT_SAFE_JSON_LIMITS: SafeJsonLimits = { maxDepth: 64, maxNodes: 1_000_000 };

export function toSafeJson(value: unknown, limits: SafeJsonLimits = DEFAULT_SAFE_JSON_LIMITS): JsonValue {
  let nodes = 0;
  const seen = new Set<object>();
  const copy = (v: unknown, depth: number, path: string): JsonValue => {
    if (++nodes > limits.maxNodes) throw new SafeJsonError(`value has more than ${limits.maxNodes} nodes`);
    if (v === null || typeof v === "boolean" || typeof v === "string") return v;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new SafeJsonError(`${path || "value"} is not a finite number`);
      return v;
    }
    if (typeof v !== "object") throw new SafeJsonError(`${path || "value"} is a ${typeof v}, not JSON`);
    if (depth >= limits.maxDepth) throw new SafeJsonError(`value is nested deeper than ${limits.maxDepth}`);
    if (seen.has(v)) throw new SafeJsonError(`${path || "value"} is cyclic`);
    seen.add(v);
    try {
      if (Array.isArray(v)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < v.length; i++) out.push(copy(v[i], depth + 1, `${path}[${i}]`));
        return out;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        throw new SafeJsonError(`${path || "value"} is not a plain object`);
      }
      const out = Object.create(null) as { [key: string]: JsonValue };
      for (const key of Object.keys(v)) {
        const desc = Object.getOwnPropertyDescriptor(v, key);
        if (!desc || !("value" in desc)) throw new SafeJsonError(`${path}.${key.slice(0, 64)} is an accessor`);
        if (desc.value === undefined) continue;
        Object.defineProperty(out, key, {
          value: copy(desc.value, depth + 1, `${path}.${key.slice(0, 64)}`),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return copy(value, 0, "");
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
