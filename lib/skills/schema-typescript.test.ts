import fc from "fast-check";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { inferSchema } from "./schema-infer";
import { MAX_DEPTH, schemaToTypeScript } from "./schema-typescript";

/** The text parses as exactly one type, in a declaration next to comments. */
function expectOneType(text: string) {
  expect(text).not.toMatch(/[\n\r\u2028\u2029]/);
  const source = `/** Result: ${text} */\ntype T = ${text}; // ${text}\n`;
  const file = ts.createSourceFile("t.ts", source, ts.ScriptTarget.Latest, true);
  expect(file.statements).toHaveLength(1);
  expect(ts.isTypeAliasDeclaration(file.statements[0]!)).toBe(true);
  expect(ts.transpileModule(source, { reportDiagnostics: true }).diagnostics).toHaveLength(0);
  expect(ts.getLeadingCommentRanges(source, 0)?.[0]?.end).toBe(source.indexOf("\ntype T"));
}

describe("schemaToTypeScript", () => {
  it("writes scalars, integer as number", () => {
    expect(schemaToTypeScript({ type: "string" })).toBe("string");
    expect(schemaToTypeScript({ type: "integer" })).toBe("number");
    expect(schemaToTypeScript({ type: "number" })).toBe("number");
    expect(schemaToTypeScript({ type: "boolean" })).toBe("boolean");
    expect(schemaToTypeScript({ type: "null" })).toBe("null");
  });

  it("writes objects with optional properties, closed and open records", () => {
    const range = { type: "object", properties: { from: { type: "string" }, to: { type: "integer" } }, required: ["from"], additionalProperties: false };
    expect(schemaToTypeScript(range)).toBe("{ from: string; to?: number }");
    expect(schemaToTypeScript({ type: "object" })).toBe("Record<string, unknown>");
    expect(schemaToTypeScript({ type: "object", properties: {}, additionalProperties: true })).toBe("Record<string, unknown>");
    expect(schemaToTypeScript({ type: "object", properties: {}, additionalProperties: false })).toBe("Record<string, never>");
    expect(schemaToTypeScript({ type: "object", additionalProperties: false, patternProperties: { "^x": {} } })).toBe("Record<string, unknown>");
    expect(schemaToTypeScript({ type: "object", properties: { "my-key": { type: "boolean" }, $id: {} }, required: ["my-key", "$id"] })).toBe(
      '{ "my-key": boolean; $id: unknown }',
    );
  });

  it("writes arrays, parenthesizing a union element", () => {
    expect(schemaToTypeScript({ type: "array", items: { type: "string" } })).toBe("string[]");
    expect(schemaToTypeScript({ type: "array" })).toBe("unknown[]");
    expect(schemaToTypeScript({ type: "array", items: { anyOf: [{ type: "string" }, { type: "null" }] } })).toBe("(string | null)[]");
    expect(schemaToTypeScript({ type: "array", items: { type: "array", items: { enum: [-1, 1] } } })).toBe("(-1 | 1)[][]");
    expect(schemaToTypeScript({ type: "array", prefixItems: [{ type: "string" }], items: { type: "number" } })).toBe("unknown[]");
  });

  it("writes enum, const, anyOf, oneOf and type lists as unions", () => {
    expect(schemaToTypeScript({ enum: ["open", "paid", 3, true, null] })).toBe('"open" | "paid" | 3 | true | null');
    expect(schemaToTypeScript({ const: "EUR" })).toBe('"EUR"');
    expect(schemaToTypeScript({ const: -2.5e-7 })).toBe("-2.5e-7");
    expect(schemaToTypeScript({ type: ["string", "null"] })).toBe("string | null");
    expect(schemaToTypeScript({ type: ["integer", "number"] })).toBe("number");
    expect(schemaToTypeScript({ oneOf: [{ type: "string" }, { anyOf: [{ type: "integer" }, { const: "x" }] }] })).toBe('string | number | "x"');
    expect(schemaToTypeScript({ anyOf: [{ type: "string" }, { $ref: "#/x" }] })).toBe("unknown");
    expect(schemaToTypeScript({ enum: [{ a: 1 }] })).toBe("unknown");
  });

  it("is unknown for what it does not read", () => {
    for (const schema of [
      {},
      true,
      false,
      null,
      "string",
      [],
      { $ref: "#/a" },
      { allOf: [{ type: "string" }] },
      { type: "date" },
      { type: [] },
      { enum: [] },
      { anyOf: [] },
    ]) {
      expect(schemaToTypeScript(schema)).toBe("unknown");
    }
  });

  it("reads only the schema's own keywords", () => {
    const inherited = Object.create({ type: "string" }) as object;
    expect(schemaToTypeScript(inherited)).toBe("unknown");
    const properties = JSON.parse('{"__proto__": {"type": "string"}, "constructor": {"type": "number"}}') as unknown;
    expect(schemaToTypeScript({ type: "object", properties, required: ["__proto__"] })).toBe("{ __proto__: string; constructor?: number }");
  });

  it("is unknown past MAX_DEPTH levels, however deep the schema goes", () => {
    const nested = (levels: number) => {
      let schema: unknown = { type: "string" };
      for (let i = 0; i < levels; i++) schema = { type: "array", items: schema };
      return schema;
    };
    expect(schemaToTypeScript(nested(MAX_DEPTH))).toBe(`string${"[]".repeat(MAX_DEPTH)}`);
    expect(schemaToTypeScript(nested(MAX_DEPTH + 1))).toBe(`unknown${"[]".repeat(MAX_DEPTH + 1)}`);
    expect(schemaToTypeScript(nested(100_000))).toBe(`unknown${"[]".repeat(MAX_DEPTH + 1)}`);
  });

  it("writes the type of an inferred result schema", () => {
    const schema = inferSchema([
      { totals: [{ currency: "EUR", net: 12.5 }], page: 1 },
      { totals: [{ currency: "USD", net: 3, note: null }], page: null },
    ]);
    expect(schemaToTypeScript(schema)).toBe("{ page: null | number; totals: { currency: string; net: number; note?: null }[] }");
  });

  it("cannot be broken out of by a hostile property name, literal or comment end", () => {
    const hostile = [
      'a"; } declare const x: any; //',
      "*/ declare const y: any; /*",
      "end */",
      "line\nbreak\u2028and\u2029more",
      "back\\slash\\",
      "\ud800 lone surrogate",
      "`${template}`",
    ];
    for (const text of hostile) {
      const schema = {
        type: "object",
        description: text,
        properties: { [text]: { const: text }, [`${text}?`]: { enum: [text, "*/"] } },
        required: [text],
      };
      const type = schemaToTypeScript(schema);
      expect(type).not.toContain("*/");
      expectOneType(type);
    }
    expect(schemaToTypeScript({ const: "a*/b" })).toBe('"a*\\/b"');
    expect(schemaToTypeScript({ type: "object", properties: { 'a"; } declare const x: any; //': { type: "string" } } })).toBe(
      '{ "a\\"; } declare const x: any; //"?: string }',
    );
  });

  it("writes plain identifiers that are keywords as property names", () => {
    const keys = ["new", "get", "set", "readonly", "class", "typeof", "keyof", "infer", "function", "constructor", "__proto__", "_", "$"];
    const schema = { type: "object", properties: Object.fromEntries(keys.map((key) => [key, { type: "string" }])), required: keys };
    const type = schemaToTypeScript(schema);
    expect(type).toBe(`{ ${keys.map((key) => `${key}: string`).join("; ")} }`);
    expectOneType(type);
  });

  it("is always one type, for any JSON value taken as a schema (property)", () => {
    const key = fc.oneof(fc.string(), fc.constantFrom("type", "properties", "items", "enum", "const", "anyOf", "oneOf", "required", "*/", "__proto__"));
    const { schema } = fc.letrec((tie) => ({
      schema: fc.oneof(
        { maxDepth: 4 },
        fc.jsonValue({ maxDepth: 2 }),
        fc.record(
          {
            type: fc.oneof(
              fc.constantFrom("string", "integer", "number", "boolean", "null", "array", "object"),
              fc.array(fc.constantFrom("string", "null", "object", "array")),
            ),
            properties: fc.dictionary(key, tie("schema"), { maxKeys: 4 }),
            required: fc.array(key, { maxLength: 3 }),
            items: tie("schema"),
          },
          { requiredKeys: ["type"] },
        ),
        fc.record({ anyOf: fc.array(tie("schema"), { maxLength: 3 }) }),
        fc.record({ enum: fc.array(fc.oneof(fc.string(), fc.double(), fc.boolean(), fc.constant(null)), { maxLength: 3 }) }),
        fc.record({ const: fc.string() }),
      ),
    }));
    fc.assert(
      fc.property(schema, (value) => {
        const type = schemaToTypeScript(value);
        expect(type).not.toContain("*/");
        expectOneType(type);
      }),
      { seed: 20261202, numRuns: 300 },
    );
  });
});
