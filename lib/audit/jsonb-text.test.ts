/**
 * jsonbText (./jsonb-text.ts) against a real PostgreSQL: for values written as the app wrote them
 * (JSON.stringify), the text `::jsonb::text` gives back, byte for byte.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { jsonbText } from "./jsonb-text";

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

describe("jsonbText", () => {
  it("is PostgreSQL's jsonb text of what JSON.stringify wrote, for any value jsonb holds", async () => {
    const texts = fc
      .sample(value, { seed: 20261203, numRuns: 2000 })
      .map((v) => JSON.stringify(v))
      .filter(storable);
    expect(texts.length).toBeGreaterThan(1500);
    const expected = await postgresTexts(texts);
    const mismatches = texts.map((text, i) => ({ text, ours: jsonbText(JSON.parse(text)), postgres: expected[i] })).filter((m) => m.ours !== m.postgres);
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it("has no text for what jsonb cannot hold", () => {
    expect(jsonbText({ a: "x\u0000y" })).toBeNull();
    expect(jsonbText(["\ud800"])).toBeNull();
    expect(jsonbText({ "\udc00": 1 })).toBeNull();
  });
});
