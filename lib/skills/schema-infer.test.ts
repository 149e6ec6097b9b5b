import { Ajv2020 } from "ajv/dist/2020";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inferSchema, MAX_DEPTH, MAX_KEYS, type JsonSchema } from "./schema-infer";

const ajv = new Ajv2020({ strict: true });
const validates = (schema: JsonSchema, value: unknown) => ajv.validate(schema, value);

describe("inferSchema", () => {
  it("describes nested rows; a key one sample lacks is not required", () => {
    const samples = [
      {
        totals: [
          { currency: "EUR", net: 12.5 },
          { currency: "USD", net: 3 },
        ],
        page: 1,
      },
      { totals: [{ currency: "GBP", net: 7, note: "late" }], page: 2 },
    ];
    const schema = inferSchema(samples);
    expect(schema).toEqual({
      type: "object",
      properties: {
        page: { type: "integer" },
        totals: {
          type: "array",
          items: {
            type: "object",
            properties: { currency: { type: "string" }, net: { type: "number" }, note: { type: "string" } },
            required: ["currency", "net"],
            additionalProperties: false,
          },
        },
      },
      required: ["page", "totals"],
      additionalProperties: false,
    });
    for (const sample of samples) expect(validates(schema, sample)).toBe(true);
    expect(validates(schema, { totals: [{ currency: "EUR", net: "12.5" }], page: 1 })).toBe(false);
    expect(validates(schema, { totals: [], page: 1, extra: true })).toBe(false);
    expect(validates(schema, { totals: [] })).toBe(false);
  });

  it("merges different kinds as anyOf, one branch per kind in a fixed order", () => {
    expect(inferSchema([{ a: 1 }, "x", null, [true], 2.5, false, 3])).toEqual({
      anyOf: [
        { type: "null" },
        { type: "boolean" },
        { type: "number" },
        { type: "string" },
        { type: "array", items: { type: "boolean" } },
        { type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: false },
      ],
    });
    expect(inferSchema(["a", null, "b"])).toEqual({ anyOf: [{ type: "null" }, { type: "string" }] });
    expect(inferSchema([[1, "two", [3]]])).toEqual({
      type: "array",
      items: { anyOf: [{ type: "integer" }, { type: "string" }, { type: "array", items: { type: "integer" } }] },
    });
  });

  it("types the scalars, integers becoming number once any number is not one", () => {
    expect(inferSchema([null])).toEqual({ type: "null" });
    expect(inferSchema([true, false])).toEqual({ type: "boolean" });
    expect(inferSchema([1, -2, 0])).toEqual({ type: "integer" });
    expect(inferSchema([1, 0.5, 2])).toEqual({ type: "number" });
    expect(inferSchema([0.5, 1])).toEqual({ type: "number" });
    expect(inferSchema([""])).toEqual({ type: "string" });
  });

  it("is {} without values, and leaves out items when no array had an element", () => {
    expect(inferSchema([])).toEqual({});
    expect(inferSchema([[], []])).toEqual({ type: "array" });
    expect(inferSchema([{}])).toEqual({ type: "object", properties: {}, required: [], additionalProperties: false });
  });

  it("lists properties and required keys in sorted order, whatever order the samples use", () => {
    const schema = inferSchema([
      { b: 1, a: 2, c: 3 },
      { c: 1, a: 2 },
    ]);
    expect(Object.keys(schema.properties as object)).toEqual(["a", "b", "c"]);
    expect(schema.required).toEqual(["a", "c"]);
    expect(
      JSON.stringify(
        inferSchema([
          { c: 1, a: 2 },
          { b: 1, a: 2, c: 3 },
        ]),
      ),
    ).toBe(JSON.stringify(schema));
  });

  it("keeps __proto__ and other prototype names as ordinary own properties, leaving that object open for Ajv", () => {
    const sample = JSON.parse('{"__proto__": {"polluted": true}, "constructor": "x", "toString": 1}') as unknown;
    const schema = inferSchema([sample]);
    const properties = schema.properties as Record<string, unknown>;
    expect(Object.keys(properties)).toEqual(["__proto__", "constructor", "toString"]);
    expect(Object.getPrototypeOf(properties)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(properties, "__proto__")?.value).toEqual({
      type: "object",
      properties: { polluted: { type: "boolean" } },
      required: ["polluted"],
      additionalProperties: false,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(schema.required).toEqual(["__proto__", "constructor", "toString"]);
    expect(schema.additionalProperties).toBeUndefined();
    expect(validates(schema, sample)).toBe(true);
    expect(validates(schema, JSON.parse('{"__proto__": {"polluted": true}, "constructor": 5, "toString": 1}'))).toBe(false);
    expect(inferSchema([{ constructor: "x" }]).additionalProperties).toBe(false);
  });

  it("says nothing of an optional property named like one of Object.prototype's, which Ajv would read there", () => {
    const samples: unknown[] = [{ constructor: [], toString: "a", id: 1 }, { toString: "b" }];
    const schema = inferSchema(samples);
    expect(schema.properties).toEqual({ constructor: {}, id: { type: "integer" }, toString: { type: "string" } });
    for (const sample of samples) expect(validates(schema, sample)).toBe(true);
  });

  it("gives up detail past MAX_DEPTH levels, without recursing into the rest", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const schema = inferSchema([deep]);
    let level: JsonSchema = schema;
    let depth = 0;
    while (level.items) {
      level = level.items as JsonSchema;
      depth++;
    }
    expect(depth).toBe(MAX_DEPTH);
    expect(level).toEqual({ type: "array" });
    expect(validates(schema, deep)).toBe(true);
  });

  it("describes an object position with more than MAX_KEYS distinct keys as any object", () => {
    const wide = (from: number, count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${from + i}`, i]));
    expect(Object.keys(inferSchema([wide(0, MAX_KEYS)]).properties as object)).toHaveLength(MAX_KEYS);
    expect(inferSchema([wide(0, MAX_KEYS + 1)])).toEqual({ type: "object" });
    const split = inferSchema([{ rows: [wide(0, 150)] }, { rows: [wide(150, 150)] }]);
    expect(split.properties).toEqual({ rows: { type: "array", items: { type: "object" } } });
    expect(validates(split, { rows: [{ anything: [1] }] })).toBe(true);
  });

  it("widens what JSON cannot hold to {}", () => {
    expect(inferSchema([undefined])).toEqual({});
    expect(inferSchema([1, Number.NaN])).toEqual({});
    expect(inferSchema([{ a: 1n }])).toEqual({ type: "object", properties: { a: {} }, required: ["a"], additionalProperties: false });
  });

  it("is satisfied by every sample it was inferred from (property)", () => {
    // JSON values whose objects often use prototype names as keys.
    const { value: hostile } = fc.letrec((tie) => ({
      value: fc.oneof(
        { maxDepth: 5 },
        fc.jsonValue({ maxDepth: 2 }),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "toString")), tie("value"), { maxKeys: 4, noNullPrototype: true }),
      ),
    }));
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.jsonValue({ maxDepth: 6 }), hostile), { minLength: 1, maxLength: 6 }), (samples) => {
        const validate = ajv.compile(inferSchema(samples));
        for (const sample of samples) expect(validate(sample), JSON.stringify(sample)).toBe(true);
      }),
      { seed: 20261202, numRuns: 300 },
    );
  });

  it("refuses a value of another shape than its samples (property)", () => {
    const record = fc.record({ id: fc.integer(), name: fc.string(), tags: fc.array(fc.string()) });
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 5 }), fc.jsonValue(), (samples, other) => {
        const validate = ajv.compile(inferSchema(samples));
        expect(validate(other)).toBe(false);
        expect(validate({ ...samples[0], id: String(samples[0]?.id) })).toBe(false);
      }),
      { seed: 20261202, numRuns: 200 },
    );
  });
});
