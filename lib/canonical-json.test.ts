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
