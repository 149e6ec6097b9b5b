import { describe, expect, it } from "vitest";
import { findUnstorable, normalizeContent, normalizeText, unstorableCharacter } from "./storable-text";

const LONE_HIGH = "Refund issued 👍".slice(0, 15);

describe("storable text", () => {
  it("names the first character PostgreSQL would refuse", () => {
    expect(unstorableCharacter(LONE_HIGH)).toBe("U+D83D");
    expect(unstorableCharacter("a\udc00b")).toBe("U+DC00");
    expect(unstorableCharacter("a\u0000")).toBe("U+0000");
    expect(unstorableCharacter("Refund issued 👍 ✓")).toBeNull();
  });

  it("finds the field path of agent input that must be refused", () => {
    expect(findUnstorable({ prompt: "ok", model: "x\u0000" }, "provenance")).toEqual({ path: "provenance.model", character: "U+0000" });
    expect(findUnstorable(["a", LONE_HIGH], "inputs")).toEqual({ path: "inputs.1", character: "U+D83D" });
    expect(findUnstorable({ ["k\udfff"]: 1 }, "x")).toEqual({ path: "x (a key)", character: "U+DFFF" });
    expect(findUnstorable({ a: ["fine", { b: "👍" }] }, "x")).toBeNull();
  });

  it("replaces lone surrogates and U+0000 with U+FFFD in strings and keys, and says so", () => {
    expect(normalizeText(LONE_HIGH)).toEqual({ value: "Refund issued \ufffd", changed: true });
    expect(normalizeText("👍")).toEqual({ value: "👍", changed: false });
    const out = normalizeContent({ [`k\u0000`]: [LONE_HIGH, 1, null, true], nested: { "\udc00": "a\u0000b" } });
    expect(out.changed).toBe(true);
    expect(JSON.parse(JSON.stringify(out.value))).toEqual({ "k\ufffd": ["Refund issued \ufffd", 1, null, true], nested: { "\ufffd": "a\ufffdb" } });
    expect(unstorableCharacter(JSON.stringify(out.value))).toBeNull();
    expect(normalizeContent({ a: ["b"] })).toMatchObject({ changed: false });
  });

  it("keeps a __proto__ key as data, never as a prototype, renamed so that Prisma stores it, and says so", () => {
    const out = normalizeContent(JSON.parse('{"__proto__": {"polluted": "\\u0000"}, "x": {"__proto__": 1}}') as Record<string, unknown>);
    expect(Object.getPrototypeOf(out.value)).toBeNull();
    expect(out.changed).toBe(true);
    expect(JSON.stringify(out.value)).toBe('{"\ufffd__proto__":{"polluted":"\ufffd"},"x":{"\ufffd__proto__":1}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(normalizeContent({ protoType: "__proto__" })).toEqual({ value: { protoType: "__proto__" }, changed: false });
  });
});
