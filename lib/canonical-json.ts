/**
 * One byte string per JSON value: object keys sorted at every depth, undefined members dropped,
 * dates as ISO strings. Everything Airlock hashes (audit events, tool pins, call digests,
 * submission digests) goes through this one function, so equal values always hash equally.
 *
 * Every own key is kept, `__proto__` included (JSON.parse makes it an ordinary own property; the
 * sorted copy is a null-prototype object, so it stays one instead of switching the copy's
 * prototype and vanishing from the digest).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value instanceof Date) return value.toISOString();
  if (value && typeof value === "object") {
    const out = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item !== undefined) out[key] = sortKeys(item);
    }
    return out;
  }
  return value;
}
