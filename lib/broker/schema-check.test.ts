/**
 * The one JSON Schema check of tool arguments and results. It counts only a value's own keys: an
 * argument named like a member of Object.prototype is present only when the caller sent it, so
 * leaving out a required `toString` or `constructor` is refused, and an absent optional one is
 * not checked as the inherited function. Schemas read afresh per call are compiled once each, and
 * only so many are kept.
 */
import { describe, expect, it } from "vitest";
import { MAX_COMPILED, compileToolSchema, issuesText } from "./schema-check";

const check = (schema: Record<string, unknown>) => {
  const compiled = compileToolSchema(schema);
  if (compiled instanceof Error) throw compiled;
  return compiled;
};

describe("compileToolSchema", () => {
  it("refuses arguments that leave out a required key an object inherits", () => {
    const required = check({
      type: "object",
      properties: { toString: { type: "string" }, constructor: { type: "string" } },
      required: ["toString", "constructor"],
    });
    expect(issuesText(required({}))).toBe("data must have required property 'toString', data must have required property 'constructor'");
    expect(required({ toString: "a", constructor: "b" })).toEqual([]);
  });

  it("names what an enum allows with its refusal, so a caller need not look the schema up", () => {
    const status = compileToolSchema({ type: "object", properties: { status: { type: "string", enum: ["open", "paid", "void"] } } });
    if (status instanceof Error) throw status;
    expect(issuesText(status({ status: "overdu" }))).toBe('data/status must be equal to one of the allowed values: "open", "paid", "void"');
  });

  it("does not check an absent optional key against the inherited member", () => {
    const optional = check({ type: "object", properties: { valueOf: { type: "number" } }, additionalProperties: false });
    expect(optional({})).toEqual([]);
    expect(issuesText(optional({ valueOf: "x" }))).toBe("data/valueOf must be number");
  });

  it("returns an Error value, never throws, for a schema Ajv cannot compile", () => {
    expect(compileToolSchema({ type: "nope" })).toBeInstanceOf(Error);
  });

  it("matches an upstream's patterns in linear time: a pattern that backtracks exponentially checks its text at once", () => {
    const code = check({ type: "object", properties: { code: { type: "string", pattern: "^(a+)+$" } } });
    const keys = check({ type: "object", patternProperties: { "^(x+x+)+y$": { type: "number" } } });
    const started = performance.now();
    expect(issuesText(code({ code: `${"a".repeat(30)}!` }))).toBe('data/code must match pattern "^(a+)+$"');
    expect(code({ code: "aaaa" })).toEqual([]);
    expect(issuesText(keys({ [`${"x".repeat(10_000)}y`]: "one" }))).toContain("must be number");
    // JavaScript's own engine takes about 3 s on those 31 characters, twice that for each more; RE2 is linear.
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("refuses, as a schema it cannot compile, a pattern RE2 cannot run in linear time (a lookahead), naming it", () => {
    const refused = compileToolSchema({ type: "object", properties: { password: { type: "string", pattern: "^(?=.*[A-Z]).{8,}$" } } });
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/^the tool's schema cannot be compiled: .*\(\?=/);
  });

  it.each([
    ["^\\S+$", ["ab-c"], ["a\u00a0b", "a\u2028b", "a b"]],
    ["^\\s$", ["\u00a0", "\ufeff", "\t"], ["x"]],
    ["^.{0,20}$", ["ok"], ["ab\u2028", "ok\rIGNORE PREVIOUS", "a\nb"]],
    ["^[\\u0020-\\u007e]+$", ["Hello ~"], ["é", "\u007f"]],
    ["^\\u{1F600}$", ["😀"], ["x"]],
    ["^[[:alpha:]$", ["[", ":", "a"], ["B", "1"]],
    ["^[^\\s]$", ["x"], ["\u00a0"]],
  ])("keeps ECMAScript's meaning of %s on RE2", (pattern, matching, refused) => {
    const one = check({ type: "string", pattern });
    for (const text of matching) expect(one(text), JSON.stringify(text)).toEqual([]);
    for (const text of refused) expect(one(text), JSON.stringify(text)).toHaveLength(1);
  });

  it.each([["(?i)abc"], ["^[[:alpha:]]$"], ["^[\\S\\d]$"], ["^[]$"], ["(?=a)b"], ["(a)\\1"]])(
    "refuses %s, which ECMAScript refuses or RE2 cannot run with ECMAScript's meaning",
    (pattern) => {
      expect(compileToolSchema({ type: "string", pattern })).toBeInstanceOf(Error);
    },
  );

  it("keeps a pattern's meaning: found anywhere unless anchored, Unicode classes included", () => {
    const named = check({ type: "object", properties: { a: { type: "string", pattern: "b" }, n: { type: "string", pattern: "^\\p{L}+$" } } });
    expect(named({ a: "abc", n: "Zoë" })).toEqual([]);
    expect(issuesText(named({ a: "ac", n: "Zoë1" }))).toBe('data/a must match pattern "b", data/n must match pattern "^\\p{L}+$"');
  });
});

describe("compiling schemas read afresh per call", () => {
  it("compiles equal schemas once and keeps at most MAX_COMPILED, each check still right", () => {
    const bounds = (max: number) => ({ type: "object", properties: { amountMinor: { maximum: max } } });
    const first = compileToolSchema(bounds(5000));
    expect(compileToolSchema(bounds(5000))).toBe(first);
    for (let max = 0; max < MAX_COMPILED + 50; max++) compileToolSchema(bounds(max));
    const again = compileToolSchema(bounds(5000));
    if (again instanceof Error) throw again;
    expect(again({ amountMinor: 6000 })).toHaveLength(1);
    expect(again({ amountMinor: 10 })).toEqual([]);
    // An evicted schema compiles again and still checks.
    const evicted = compileToolSchema(bounds(0));
    if (evicted instanceof Error) throw evicted;
    expect(evicted({ amountMinor: 1 })).toHaveLength(1);
  });
});
