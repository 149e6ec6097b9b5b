/**
 * The one JSON Schema check of tool arguments and results counts only a value's own keys: an
 * argument named like a member of Object.prototype is present only when the caller sent it, so
 * leaving out a required `toString` or `constructor` is refused, and an absent optional one is
 * not checked as the inherited function.
 */
import { describe, expect, it } from "vitest";
import { compileToolSchema, issuesText } from "./schema-check";

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
