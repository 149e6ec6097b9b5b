/**
 * A JSON Schema as a TypeScript type, for showing a skill's arguments and result as a declaration
 * (`{ from: string; to?: number }`).
 *
 * schemaToTypeScript(schema) reads a subset: `const` and `enum` of JSON primitives (literals),
 * `type` (a name or a list of names; "integer" is number), `items` of an array, `properties` and
 * `required` of an object (a property not required is optional; without properties an object is
 * Record<string, unknown>, or Record<string, never> when `additionalProperties` is false), and
 * `anyOf` / `oneOf` (a union). When a schema has several of these, the first in that order
 * decides. Anything else (`$ref`, `allOf`, a boolean schema, a schema that is not an object) is
 * `unknown`, and so are a tuple's elements and whatever is nested deeper than MAX_DEPTH. Keywords that only
 * narrow (formats, bounds, patterns) are left out, so the type never refuses a JSON value the
 * schema accepts. Only the schema's own keys are read, never inherited ones.
 *
 * The text is one line and always exactly one type, whatever the schema holds, so it can be
 * placed in a declaration or a comment: every string (a literal, a property name that is not a
 * plain identifier) goes through JSON.stringify, with a star followed by a slash written `*\/`
 * and U+2028 / U+2029 escaped, so no text can end a comment, a line or the type. Pure; the cost
 * is linear in the size of the schema.
 */

export const MAX_DEPTH = 20;

type Schema = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function schemaToTypeScript(schema: unknown): string {
  return union(members(schema, 0));
}

/** A union's members, none of them a union itself; ["unknown"] when one of them is unknown. */
function members(schema: unknown, depth: number): string[] {
  if (depth > MAX_DEPTH || !isSchema(schema)) return ["unknown"];
  const constant = own(schema, "const");
  if (constant !== undefined) return [literal(constant)];
  const choices = own(schema, "enum");
  if (choices !== undefined) return Array.isArray(choices) && choices.length > 0 ? flat([choices.map((choice) => literal(choice))]) : ["unknown"];
  const type = own(schema, "type");
  if (type !== undefined) {
    const names = typeof type === "string" ? [type] : Array.isArray(type) && type.length > 0 ? [...new Set(type)] : [];
    return names.length > 0 ? flat(names.map((name) => [typeNamed(name, schema, depth)])) : ["unknown"];
  }
  const alternatives = own(schema, "anyOf") ?? own(schema, "oneOf");
  if (Array.isArray(alternatives) && alternatives.length > 0) return flat(alternatives.map((alternative) => members(alternative, depth + 1)));
  return ["unknown"];
}

function typeNamed(name: unknown, schema: Schema, depth: number): string {
  switch (name) {
    case "string":
    case "boolean":
    case "null":
      return name;
    case "number":
    case "integer":
      return "number";
    case "array":
      return arrayType(schema, depth);
    case "object":
      return objectType(schema, depth);
    default:
      return "unknown";
  }
}

function arrayType(schema: Schema, depth: number): string {
  // With prefixItems, `items` describes only the elements after the prefix.
  const element = own(schema, "prefixItems") === undefined ? members(own(schema, "items"), depth + 1) : ["unknown"];
  return element.length > 1 ? `(${union(element)})[]` : `${union(element)}[]`;
}

function objectType(schema: Schema, depth: number): string {
  const given = own(schema, "properties");
  const properties: Schema = isSchema(given) ? given : {};
  const keys = Object.keys(properties);
  if (keys.length === 0) {
    const closed = own(schema, "additionalProperties") === false && own(schema, "patternProperties") === undefined;
    return closed ? "Record<string, never>" : "Record<string, unknown>";
  }
  const listed = own(schema, "required");
  const required = new Set(Array.isArray(listed) ? listed : []);
  const fields = keys.map(
    (key) => `${IDENTIFIER.test(key) ? key : quoted(key)}${required.has(key) ? "" : "?"}: ${union(members(own(properties, key), depth + 1))}`,
  );
  return `{ ${fields.join("; ")} }`;
}

function literal(value: unknown): string {
  switch (typeof value) {
    case "string":
      return quoted(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "unknown";
    case "boolean":
      return String(value);
    default:
      return value === null ? "null" : "unknown";
  }
}

function quoted(text: string): string {
  return JSON.stringify(text).replaceAll("*/", "*\\/").replaceAll("\u2028", "\\u2028").replaceAll("\u2029", "\\u2029");
}

function flat(lists: readonly string[][]): string[] {
  const all = [...new Set(lists.flat())];
  return all.includes("unknown") ? ["unknown"] : all;
}

function union(types: readonly string[]): string {
  return types.join(" | ");
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A keyword of the schema itself, never one inherited from a prototype. */
function own(schema: Schema, key: string): unknown {
  return Object.hasOwn(schema, key) ? schema[key] : undefined;
}
