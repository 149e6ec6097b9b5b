import { describe, expect, it } from "vitest";
import { parseSafeJson, SafeJsonError, toSafeJson, type JsonValue } from "./safe-json";

/** Every object in the copy, with its prototype, depth first. */
function objectsOf(value: JsonValue): object[] {
  if (value === null || typeof value !== "object") return [];
  const children = Array.isArray(value) ? value : Object.values(value);
  return [value, ...children.flatMap(objectsOf)];
}

function refusal(value: unknown, limits?: { maxDepth: number; maxNodes: number }): string {
  try {
    toSafeJson(value, limits);
  } catch (error) {
    expect(error).toBeInstanceOf(SafeJsonError);
    return (error as Error).message;
  }
  throw new Error("toSafeJson accepted the value");
}

describe("toSafeJson", () => {
  it("copies JSON data into arrays and null-prototype objects, sharing nothing with the original", () => {
    const original = { id: "inv_1", amount: 12.5, paid: true, note: null, lines: [{ sku: "a", qty: 2 }, [1, "two"]], empty: {} };
    const copy = toSafeJson(original) as Record<string, JsonValue>;
    expect(JSON.stringify(copy)).toBe(JSON.stringify(original));
    for (const object of objectsOf(copy)) {
      expect(Object.getPrototypeOf(object)).toBe(Array.isArray(object) ? Array.prototype : null);
    }
    expect(copy.lines).not.toBe(original.lines);
    (original.lines[0] as { qty: number }).qty = 99;
    expect(((copy.lines as JsonValue[])[0] as Record<string, JsonValue>).qty).toBe(2);
  });

  it("leaves out object properties that are undefined, as JSON.stringify does, and refuses undefined elsewhere", () => {
    expect(JSON.stringify(toSafeJson({ a: 1, b: undefined }))).toBe('{"a":1}');
    expect(refusal([1, undefined])).toBe("[1] is a undefined, not JSON");
    expect(refusal(undefined)).toBe("value is a undefined, not JSON");
  });

  it("keeps a __proto__ key as an own data property and never switches a prototype", () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "nested": {"__proto__": [1]}}') as unknown;
    const copy = toSafeJson(parsed) as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(Object.keys(copy)).toEqual(["__proto__", "nested"]);
    expect(Object.getOwnPropertyDescriptor(copy, "__proto__")?.value).toEqual(expect.objectContaining({ polluted: true }));
    expect(Object.getPrototypeOf(copy.nested)).toBeNull();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"polluted":true},"nested":{"__proto__":[1]}}');
  });

  it("refuses accessors without calling them, on objects and on arrays", () => {
    let called = 0;
    const getter = { enumerable: true, get: () => ++called };
    expect(refusal(Object.defineProperty({ a: { b: 1 } }, "secret", getter))).toBe(".secret is an accessor");
    expect(refusal({ list: Object.defineProperty([1, 2], 1, getter) })).toBe(".list[1] is an accessor");
    expect(called).toBe(0);
  });

  it("refuses class instances, arrays that are not plain, and holes", () => {
    class Invoice {
      id = "inv_1";
    }
    class List extends Array<number> {}
    expect(refusal({ when: new Date(0) })).toBe(".when is not a plain object");
    expect(refusal([new Map()])).toBe("[0] is not a plain object");
    expect(refusal({ invoice: new Invoice() })).toBe(".invoice is not a plain object");
    expect(refusal({ items: List.from([1]) })).toBe(".items is not a plain array");
    expect(refusal({ items: [1, , 3] })).toBe(".items[1] is a hole");
  });

  it("refuses functions, symbols, bigints and non-finite numbers, naming where", () => {
    expect(refusal({ f: () => 1 })).toBe(".f is a function, not JSON");
    expect(refusal([Symbol("s")])).toBe("[0] is a symbol, not JSON");
    expect(refusal({ n: [1n] })).toBe(".n[0] is a bigint, not JSON");
    for (const n of [NaN, Infinity, -Infinity]) expect(refusal({ a: [{ n }] })).toBe(".a[0].n is not a finite number");
  });

  it("reads only own enumerable string keys", () => {
    const value = Object.defineProperty({ shown: 3 }, "hidden", { value: 2, enumerable: false }) as Record<string | symbol, unknown>;
    value[Symbol("s")] = 4;
    // A key every plain object inherits, for the length of this test.
    Object.defineProperty(Object.prototype, "inheritedForTest", { value: 1, enumerable: true, writable: true, configurable: true });
    try {
      expect(JSON.stringify(toSafeJson(value))).toBe('{"shown":3}');
    } finally {
      delete (Object.prototype as Record<string, unknown>).inheritedForTest;
    }
  });

  it("refuses cycles, but copies a value shared by two branches", () => {
    const shared = { x: 1 };
    expect(JSON.stringify(toSafeJson({ a: shared, b: [shared] }))).toBe('{"a":{"x":1},"b":[{"x":1}]}');
    const cyclic: Record<string, unknown> = { a: { b: [] as unknown[] } };
    ((cyclic.a as { b: unknown[] }).b as unknown[]).push(cyclic);
    expect(refusal(cyclic)).toBe(".a.b[0] is cyclic");
  });

  it("holds to its depth and node limits, exactly", () => {
    const nest = (depth: number): unknown => (depth === 0 ? 1 : { d: nest(depth - 1) });
    expect(() => toSafeJson(nest(4), { maxDepth: 4, maxNodes: 100 })).not.toThrow();
    expect(refusal(nest(5), { maxDepth: 4, maxNodes: 100 })).toBe("value is nested deeper than 4");
    expect(() => toSafeJson([1, 2, 3], { maxDepth: 4, maxNodes: 4 })).not.toThrow();
    expect(refusal([1, 2, 3, 4], { maxDepth: 4, maxNodes: 4 })).toBe("value has more than 4 nodes");
  });

  it("never quotes a value in its message, and cuts keys to 64 characters", () => {
    const key = "k".repeat(100);
    const message = refusal({ token: "sk_live_SECRET", [key]: [Number.NaN] });
    expect(message).toBe(`.${"k".repeat(64)}[0] is not a finite number`);
    expect(message).not.toContain("SECRET");
  });

  it("redacts a credential used as a key before cutting it, so no part of one is quoted", () => {
    const dsn = "postgres://app:Sup3rS3cretPassw0rdX9@db.internal:5432/prod";
    const message = refusal({ rows: { [`${dsn}${"A".repeat(60)}`]: Number.POSITIVE_INFINITY } });
    expect(message).toMatch(/^\.rows\.\[REDACTED:connection_string\]A* is not a finite number$/);
    expect(message).not.toContain("Sup3r");
  });
});

describe("parseSafeJson", () => {
  it("parses text into a safe copy, and refuses text that is not JSON without quoting it", () => {
    const copy = parseSafeJson('{"a":[1,{"b":null}]}') as Record<string, JsonValue>;
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(JSON.stringify(copy)).toBe('{"a":[1,{"b":null}]}');
    expect(() => parseSafeJson("{secret: 1}")).toThrow(new SafeJsonError("not valid JSON"));
    expect(() => parseSafeJson("[[[1]]]", { maxDepth: 2, maxNodes: 10 })).toThrow("nested deeper than 2");
  });
});
