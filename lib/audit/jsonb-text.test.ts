/**
 * isJsonbText (./jsonb-text.ts) against a real PostgreSQL: for values written as the app wrote them
 * (JSON.stringify), it holds for the text `::jsonb::text` gives back, and for no other text of them.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { isJsonbText } from "./jsonb-text";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
}, 60_000);
afterAll(() => db?.drop());

/** PostgreSQL's jsonb text of each JSON text, in order. */
async function postgresTexts(texts: string[]): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ text: string }[]>`
    SELECT t::jsonb::text AS text FROM unnest(${texts}::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`;
  return rows.map((row) => row.text);
}

const storable = (text: string) => !text.includes("\\u0000") && text.isWellFormed();
const key = fc.oneof(fc.string({ unit: "binary", maxLength: 6 }), fc.constantFrom("a", "aa", "b", "é", "ab", "__proto__", "10", "9"));
const number = fc.oneof(fc.double({ noNaN: true }), fc.integer(), fc.constantFrom(1e21, 1.5e-7, -2.5e-300, 1e300, 123456789012345680000, -0, 0.1));
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: "small" },
    number,
    fc.string({ unit: "binary", maxLength: 8 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("node"), { maxLength: 4 }),
    fc.dictionary(key, tie("node"), { maxKeys: 5 }),
  ),
})).node;

describe("isJsonbText", () => {
  it("holds for PostgreSQL's jsonb text of what JSON.stringify wrote, for any value jsonb holds", async () => {
    const texts = fc
      .sample(value, { seed: 20261203, numRuns: 2000 })
      .map((v) => JSON.stringify(v))
      .filter(storable);
    expect(texts.length).toBeGreaterThan(1500);
    const jsonb = await postgresTexts(texts);
    expect(texts.filter((text, i) => !isJsonbText(jsonb[i]!, JSON.parse(text))).slice(0, 5)).toEqual([]);
    // The compact text is another form of the same value wherever jsonb adds a space.
    const spaced = texts.filter((text, i) => text !== jsonb[i]);
    expect(spaced.length).toBeGreaterThan(500);
    expect(spaced.filter((text) => isJsonbText(text, JSON.parse(text))).slice(0, 5)).toEqual([]);
  });

  it("holds for no other text of the same value: duplicate keys, another order, spacing or spelling", () => {
    const value = { page: 0, status: "open", rows: [1.5, { b: true, a: null }] };
    expect(isJsonbText('{"page": 0, "rows": [1.5, {"a": null, "b": true}], "status": "open"}', value)).toBe(true);
    for (const text of [
      '{"page": 0, "page": 0, "rows": [1.5, {"a": null, "b": true}], "status": "open"}',
      '{"rows": [1.5, {"a": null, "b": true}], "page": 0, "status": "open"}',
      '{"page":0, "rows": [1.5, {"a": null, "b": true}], "status": "open"}',
      '{"page": 0.0, "rows": [1.5, {"a": null, "b": true}], "status": "open"}',
      '{"page": 0, "rows": [15e-1, {"a": null, "b": true}], "status": "open"}',
      '{"page": 0, "rows": [1.5, {"a": null, "b": true}], "status": "op\\u0065n"}',
      '{"page": 0, "rows": [1.5, {"a": null, "b": true}], "status": "open"} ',
      '{"page": 0, "rows": [1.5, {"a": null, "b": true}], "status": "open"',
    ]) {
      expect(isJsonbText(text, value), text).toBe(false);
    }
  });

  it("holds for no text of what jsonb cannot hold", () => {
    expect(isJsonbText('{"a": "x\\u0000y"}', { a: "x\u0000y" })).toBe(false);
    expect(isJsonbText('["\\ud800"]', ["\ud800"])).toBe(false);
  });
});
