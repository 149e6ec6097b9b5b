import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonical-json";
import { jsonDigest } from "./digest";

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops undefined members", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
  });

  it("keeps a __proto__ key from parsed JSON, so a value hidden there changes the digest", () => {
    const plain = JSON.parse('{"iban":"DE00"}') as unknown;
    const smuggled = JSON.parse('{"iban":"DE00","__proto__":{"iban":"ATTACKER","amount":1000000}}') as unknown;
    expect(canonicalJson(smuggled)).toBe('{"__proto__":{"amount":1000000,"iban":"ATTACKER"},"iban":"DE00"}');
    expect(jsonDigest(smuggled)).not.toBe(jsonDigest(plain));
    expect(JSON.parse(canonicalJson(smuggled))).toEqual(smuggled);
  });
});

/** The definition, as every stored digest was made: JSON.stringify of a copy with sorted keys. */
function reference(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v instanceof Date) return v.toISOString();
    if (v && typeof v === "object") {
      const out = Object.create(null) as Record<string, unknown>;
      for (const key of Object.keys(v).sort()) {
        const item = (v as Record<string, unknown>)[key];
        if (item !== undefined) out[key] = sortKeys(item);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(value)) ?? "null";
}

describe("canonicalJson is the definition, byte for byte", () => {
  it("for any JSON value, and values JSON cannot hold (undefined, NaN, -0, dates, functions)", () => {
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(Number.NaN),
      fc.constant(-0),
      fc.constant(Infinity),
      fc.date({ noInvalidDate: true }),
      fc.constant(() => 1),
    );
    // Keys JavaScript orders first (array indexes), and near misses that it does not.
    const indexLike = fc.constantFrom("0", "1", "2", "10", "01", "-0", "1.5", "1e3", "4294967294", "4294967295", "99999999999");
    const key = fc.oneof(fc.string({ unit: "binary" }), indexLike);
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, fc.jsonValue(), odd, fc.array(tie("node")), fc.dictionary(key, tie("node"))),
    })).node;
    fc.assert(
      fc.property(value, (v) => canonicalJson(v) === reference(v)),
      { seed: 20261202, numRuns: 2000 },
    );
  });

  it("for hostile strings and keys: lone surrogates, NUL, escapes, __proto__", () => {
    const text = fc.string({ unit: "binary", maxLength: 40 });
    fc.assert(
      fc.property(fc.dictionary(text, text), text, (dict, s) => {
        const parsed = JSON.parse(`{"__proto__":${JSON.stringify(s)},"a":1}`) as unknown;
        return canonicalJson(dict) === reference(dict) && canonicalJson([s, parsed]) === reference([s, parsed]);
      }),
      { seed: 20261202, numRuns: 1000 },
    );
    expect(canonicalJson("\ud800\u0000")).toBe('"\\ud800\\u0000"');
  });

  it("throws on a bigint, as JSON.stringify does", () => {
    expect(() => canonicalJson({ a: 1n })).toThrow(TypeError);
  });

  it("refuses values whose old form ran their own code: a Proxy, an Array subclass, an own toJSON", () => {
    class Tagged extends Array<number> {}
    for (const value of [new Proxy({ b: 1, a: 2 }, {}), { x: Tagged.from([1]) }, { a: 1, toJSON: () => "x" }, [{ y: 2, toJSON: () => 1 }]]) {
      expect(() => canonicalJson(value)).toThrow(TypeError);
    }
    // A class instance's inherited toJSON was never called: it is written by its own keys, as before.
    class Money {
      constructor(readonly minor: number) {}
      toJSON() {
        return "hidden";
      }
    }
    expect(canonicalJson(new Money(5))).toBe(reference(new Money(5)));
  });
});
