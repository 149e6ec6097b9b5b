/**
 * The result schema of a script, inferred from the results of its past runs: a JSON Schema
 * (draft 2020-12 subset) that every one of those results satisfies, to show a reviewer what a
 * skill returns and to check what it returns later.
 *
 * inferSchema(values) describes each position by the kinds seen there:
 * - null, boolean, string by their type; numbers as "integer" while every one seen is an integer,
 *   "number" once one is not;
 * - an array by `items`, the merge of every element of every array seen there (omitted when none
 *   had an element);
 * - an object by `properties` (every key seen, in sorted order, except that JavaScript lists
 *   array-index keys such as "0" first), `required` (the keys every object there had, sorted) and
 *   `additionalProperties: false`;
 * - several kinds at one position as `anyOf`, one branch per kind, always in the order null,
 *   boolean, number, string, array, object; no values at all as `{}` (anything).
 * Every value given validates against the schema (a property test with Ajv holds it to that).
 *
 * Values are JSON, as JSON.parse returns them; objects are read by their own enumerable keys, kept
 * in a Map, so a key such as "__proto__" is an ordinary property, and in the schema an own key.
 * Ajv as Airlock configures it (lib/broker/schema-check.ts) reads keys through the prototype, so
 * where a name Object.prototype has would make it refuse a sample, the schema says less: an
 * optional property with such a name (`constructor`, `toString`, …) is `{}`, and an object
 * position with a "__proto__" key, whose property schema Ajv skips, has no
 * `additionalProperties: false`.
 *
 * What JSON cannot hold (undefined, a non-finite number, a bigint, a function, a symbol) widens its
 * position to `{}`. Size is bounded, where the schema gives up detail rather than grow: a position
 * nested deeper than MAX_DEPTH is `{}` (so recursion never goes deeper than that), and an object
 * position with more than MAX_KEYS distinct keys is `{ type: "object" }`, any object. Pure; the
 * cost is linear in the size of the values.
 */

export type JsonSchema = Record<string, unknown>;

export const MAX_DEPTH = 20;
export const MAX_KEYS = 200;

/** What has been seen at one position. */
type Shape = {
  anything: boolean;
  null: boolean;
  boolean: boolean;
  number: "integer" | "number" | undefined;
  string: boolean;
  /** The merged elements of the arrays seen here. */
  array: Shape | undefined;
  object: ObjectShape | undefined;
};

/** `fields` is undefined once more than MAX_KEYS distinct keys have been seen. */
type ObjectShape = { seen: number; fields: Map<string, Field> | undefined };
type Field = { shape: Shape; seen: number };

export function inferSchema(values: readonly unknown[]): JsonSchema {
  const shape = emptyShape();
  for (const value of values) add(shape, value, 0);
  return render(shape);
}

function emptyShape(): Shape {
  return { anything: false, null: false, boolean: false, number: undefined, string: false, array: undefined, object: undefined };
}

function add(shape: Shape, value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) {
    shape.anything = true;
    return;
  }
  switch (typeof value) {
    case "boolean":
      shape.boolean = true;
      return;
    case "string":
      shape.string = true;
      return;
    case "number":
      if (!Number.isFinite(value)) shape.anything = true;
      else shape.number = Number.isInteger(value) && shape.number !== "number" ? "integer" : "number";
      return;
    case "object":
      if (value === null) shape.null = true;
      else if (Array.isArray(value)) addArray(shape, value, depth);
      else addObject(shape, value, depth);
      return;
    default:
      shape.anything = true;
  }
}

function addArray(shape: Shape, value: readonly unknown[], depth: number): void {
  const items = (shape.array ??= emptyShape());
  for (let i = 0; i < value.length; i++) add(items, value[i], depth + 1);
}

function addObject(shape: Shape, value: object, depth: number): void {
  const object = (shape.object ??= { seen: 0, fields: new Map() });
  object.seen++;
  if (!object.fields) return;
  for (const [key, member] of Object.entries(value)) {
    let field = object.fields.get(key);
    if (!field) {
      if (object.fields.size === MAX_KEYS) {
        object.fields = undefined;
        return;
      }
      field = { shape: emptyShape(), seen: 0 };
      object.fields.set(key, field);
    }
    field.seen++;
    add(field.shape, member, depth + 1);
  }
}

function render(shape: Shape): JsonSchema {
  if (shape.anything) return {};
  const branches: JsonSchema[] = [];
  if (shape.null) branches.push({ type: "null" });
  if (shape.boolean) branches.push({ type: "boolean" });
  if (shape.number) branches.push({ type: shape.number });
  if (shape.string) branches.push({ type: "string" });
  if (shape.array) {
    const items = render(shape.array);
    branches.push(Object.keys(items).length > 0 ? { type: "array", items } : { type: "array" });
  }
  if (shape.object) branches.push(renderObject(shape.object));
  return branches.length > 1 ? { anyOf: branches } : (branches[0] ?? {});
}

function renderObject({ seen, fields }: ObjectShape): JsonSchema {
  if (!fields) return { type: "object" };
  const sorted = [...fields].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // Ajv checks an optional property that is absent against what the prototype has under its name.
  const described = (key: string, field: Field) => (field.seen < seen && key in Object.prototype ? {} : render(field.shape));
  const schema = {
    type: "object",
    // fromEntries defines own properties, so "__proto__" stays a key like any other.
    properties: Object.fromEntries(sorted.map(([key, field]) => [key, described(key, field)])),
    required: sorted.filter(([, field]) => field.seen === seen).map(([key]) => key),
  };
  // Ajv skips a "__proto__" entry of `properties`, and so would refuse that key as additional.
  return fields.has("__proto__") ? schema : { ...schema, additionalProperties: false };
}
