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

  it("does not check an absent optional key against the inherited member", () => {
    const optional = check({ type: "object", properties: { valueOf: { type: "number" } }, additionalProperties: false });
    expect(optional({})).toEqual([]);
    expect(issuesText(optional({ valueOf: "x" }))).toBe("data/valueOf must be number");
  });

  it("returns an Error value, never throws, for a schema Ajv cannot compile", () => {
    expect(compileToolSchema({ type: "nope" })).toBeInstanceOf(Error);
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
