import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { canonicalJson } from "@/lib/canonical-json";
import { jsonDigest } from "@/lib/digest";
import { chainHash } from "./record";
import { parsedCanonicalJson, parsedChainHash, parsedJsonDigest } from "./verify-digest";

// Keys JavaScript orders first (array indexes), near misses that it does not, and keys that name
// members of Object.prototype, which an assignment would not make own keys.
const indexLike = fc.constantFrom("0", "1", "2", "10", "01", "-0", "1.5", "1e3", "4294967294", "4294967295", "99999999999");
const protoLike = fc.constantFrom("__proto__", "constructor", "toString", "toJSON", "hasOwnProperty", "valueOf");
const key = fc.oneof(fc.string({ unit: "binary" }), indexLike, protoLike);
const json = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small" }, fc.jsonValue(), fc.array(tie("node")), fc.dictionary(key, tie("node"))),
})).node;
/** Arrays of objects sharing their keys, in several orders, with members that differ (what the key-order cache sees). */
const records = fc
  .tuple(fc.uniqueArray(key, { maxLength: 6 }), fc.array(fc.tuple(fc.nat(), fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 6 })), { maxLength: 8 }))
  .map(([keys, rows]) =>
    rows.map(([rotation, values]) => {
      const order = [...keys.slice(rotation % (keys.length || 1)), ...keys.slice(0, rotation % (keys.length || 1))];
      return `{${order.map((k, i) => `${JSON.stringify(k)}:${JSON.stringify(values[i] ?? null)}`).join(",")}}`;
    }),
  )
  .map((texts) => `[${texts.join(",")}]`);

describe("parsedCanonicalJson is canonicalJson for what JSON.parse returns", () => {
  it("for any JSON text, parsed", () => {
    fc.assert(
      fc.property(json, (value) => {
        const parsed = JSON.parse(JSON.stringify(value)) as unknown;
        return parsedCanonicalJson(parsed) === canonicalJson(parsed) && parsedJsonDigest(parsed) === jsonDigest(parsed);
      }),
      { seed: 20261202, numRuns: 1000 },
    );
  });

  it("for arrays of records whose keys come in changing orders", () => {
    fc.assert(
      fc.property(records, (text) => {
        const parsed = JSON.parse(text) as unknown;
        return parsedCanonicalJson(parsed) === canonicalJson(parsed);
      }),
      { seed: 20261202, numRuns: 2000 },
    );
  });

  it("keeps a __proto__ key as a member, sorted like any other, and leaves the parsed value as it was", () => {
    const text = '{"b":{"__proto__":{"x":1},"a":[{"z":1,"__proto__":2},{"z":1,"__proto__":3}]},"__proto__":null}';
    const parsed = JSON.parse(text) as unknown;
    expect(parsedCanonicalJson(parsed)).toBe('{"__proto__":null,"b":{"__proto__":{"x":1},"a":[{"__proto__":2,"z":1},{"__proto__":3,"z":1}]}}');
    expect(parsedCanonicalJson(parsed)).toBe(canonicalJson(parsed));
    expect(JSON.stringify(parsed)).toBe(text);
  });

  it("writes numbers JSON.parse overflows or signs as canonicalJson does", () => {
    const parsed = JSON.parse('{"b":1e400,"a":-1e400,"c":-0,"d":1e21,"e":5e-324}') as unknown;
    expect(parsedCanonicalJson(parsed)).toBe('{"a":null,"b":null,"c":0,"d":1e+21,"e":5e-324}');
    expect(parsedCanonicalJson(parsed)).toBe(canonicalJson(parsed));
  });
});

describe("parsedCanonicalJson with a toJSON on a prototype", () => {
  afterEach(() => {
    delete (Object.prototype as { toJSON?: unknown }).toJSON;
  });

  it("writes canonicalJson's text, which calls no inherited toJSON", () => {
    const parsed = JSON.parse('{"b":1,"a":[{"d":2,"c":3}]}') as unknown;
    Object.defineProperty(Object.prototype, "toJSON", { value: () => "hijacked", configurable: true, writable: true });
    expect(JSON.stringify(parsed)).toBe('"hijacked"');
    expect(parsedCanonicalJson(parsed)).toBe('{"a":[{"c":3,"d":2}],"b":1}');
  });
});

describe("parsedChainHash", () => {
  it("is chainHash of the event with its time as a Date", () => {
    const text = fc.oneof(fc.string({ unit: "binary" }), fc.constantFrom("run", "system", "run.succeeded"));
    const event = fc.record({
      at: fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }).map((d) => d.toISOString()),
      actorType: text,
      actorId: fc.option(text),
      action: text,
      subjectType: text,
      subjectId: fc.option(text),
      data: fc.dictionary(key, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 6 }).map((data) => JSON.parse(JSON.stringify(data)) as Record<string, unknown>),
    });
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9a-f]{64}$/),
        event,
        (prevHash, e) => parsedChainHash(prevHash, e) === chainHash(prevHash, { ...e, at: new Date(e.at) }),
      ),
      { seed: 20261202, numRuns: 2000 },
    );
  });

  it("hashes a time in another form through a Date, and one in toISOString's form as written", () => {
    const event = { actorType: "system", actorId: "bench", action: "a", subjectType: "run", subjectId: null, data: { b: 1, a: [2] } };
    const prevHash = "0".repeat(64);
    for (const at of ["2026-03-01 10:00:00+00", "2026-03-01T10:00:00Z", "2026-03-01T11:00:00.000+01:00"]) {
      expect(parsedChainHash(prevHash, { ...event, at })).toBe(chainHash(prevHash, { ...event, at: new Date("2026-03-01T10:00:00.000Z") }));
    }
    // February 30th is March 2nd to a Date: in toISOString's form it is no event's time.
    const impossible = { ...event, at: "2026-02-30T00:00:00.000Z" };
    expect(parsedChainHash(prevHash, impossible)).not.toBe(chainHash(prevHash, { ...event, at: new Date(impossible.at) }));
  });
});
