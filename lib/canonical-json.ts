/**
 * One byte string per JSON value: object keys sorted at every depth, undefined members dropped,
 * dates as ISO strings. Everything Airlock hashes (audit events, tool pins, call digests,
 * submission digests) goes through this one function, so equal values always hash equally.
 *
 * The text is exactly `JSON.stringify` of a copy with sorted keys (the form every stored digest
 * was made with), written in one pass without the copy: audit verification spends most of its time
 * here. Members JSON cannot hold (undefined, functions, symbols) are dropped from objects and are
 * `null` in arrays; a non-finite number is `null`; a bigint throws, as in JSON.stringify.
 *
 * "Sorted" as that copy's keys come out: JavaScript lists an object's array-index keys ("0", "1", …)
 * first, in numeric order, whatever order they were inserted in; the other keys follow, sorted.
 *
 * Every own key is kept, `__proto__` included (JSON.parse makes it an ordinary own property).
 * Only a Date's toJSON is honoured; any other object is written by its own enumerable keys.
 * Values whose old form depended on running their code are refused with a TypeError (no caller
 * passes one: every input is JSON-shaped): a Proxy, an array that is not a plain Array, and an
 * object with a toJSON method of its own.
 */
import { types } from "node:util";
export function canonicalJson(value: unknown): string {
  return write(value) ?? "null";
}

/** The text of a value, or undefined for one JSON leaves out. */
function write(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    case "bigint":
      return JSON.stringify(value); // throws, as JSON.stringify does
    default:
      return undefined;
  }
  if (value === null) return "null";
  if (types.isProxy(value)) throw new TypeError("canonicalJson: a Proxy has no canonical form");
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw new TypeError("canonicalJson: only plain arrays have a canonical form");
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + (write(value[i]) ?? "null");
    return out + "]";
  }
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof (value as { toJSON?: unknown }).toJSON === "function" && Object.hasOwn(value, "toJSON")) {
    throw new TypeError("canonicalJson: an object with its own toJSON method has no canonical form");
  }
  let out = "";
  for (const key of sortedKeys(value)) {
    const item = write((value as Record<string, unknown>)[key]);
    if (item !== undefined) out += (out === "" ? "{" : ",") + JSON.stringify(key) + ":" + item;
  }
  return out === "" ? "{}" : out + "}";
}

const INDEX = /^(?:0|[1-9]\d{0,9})$/;

/** An array index as the language defines it: an integer key below 2^32 - 1, in canonical form. */
function isIndex(key: string): boolean {
  return INDEX.test(key) && Number(key) < 4_294_967_295;
}

/** The keys in the order of a copy built by inserting them sorted (see the header). */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value); // index keys first, ascending; then insertion order
  let indexes = 0;
  while (indexes < keys.length && isIndex(keys[indexes]!)) indexes++;
  return indexes === 0 ? keys.sort() : keys.slice(0, indexes).concat(keys.slice(indexes).sort());
}
