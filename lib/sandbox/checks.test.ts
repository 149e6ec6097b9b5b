import { describe, expect, it } from "vitest";
import { evaluateCheck } from "./checks";

const rows = [
  { id: "inv_1", amountMinor: 1000, currency: "EUR", paid: { at: "2026-01-03" } },
  { id: "inv_2", amountMinor: 250, currency: "EUR", paid: { at: "2026-01-09" } },
  { id: "inv_3", amountMinor: -50, currency: "EUR", paid: { at: "2026-01-31" } },
];

describe("evaluateCheck: the host decides", () => {
  it("sum: an exact decimal sum over a dotted path, within the tolerance", () => {
    expect(evaluateCheck("sum", "net", [rows, "amountMinor", 1200])).toMatchObject({
      ok: true,
      rows: 3,
      message: "the sum of amountMinor over 3 rows is 1200, expected 1200",
    });
    // The off-by-7% answer: refunds counted once as negative revenue and once more as rows.
    expect(evaluateCheck("sum", "net", [rows, "amountMinor", 1290])).toMatchObject({ ok: false, message: expect.stringContaining("(off by 90)") });
    expect(evaluateCheck("sum", "net", [rows, "amountMinor", 1201, { tolerance: 1 }]).ok).toBe(true);
    expect(evaluateCheck("sum", "floats", [[{ v: 0.1 }, { v: 0.2 }], "v", 0.3]).ok).toBe(true);
    expect(evaluateCheck("sum", "nested", [[{ a: { b: 2 } }, { a: { b: 3 } }], "a.b", 5]).ok).toBe(true);
  });

  it("sum: a row without a number fails naming the row; bad arguments fail naming the argument", () => {
    expect(evaluateCheck("sum", "net", [[...rows, { amountMinor: "12" }], "amountMinor", 1212])).toMatchObject({
      ok: false,
      message: 'row 3 has no number at amountMinor: "12"',
    });
    expect(evaluateCheck("sum", "x", [{ not: "rows" }, "a", 1]).message).toMatch(/^rows must be an array/);
    expect(evaluateCheck("sum", "x", [rows, "", 1]).message).toMatch(/^field must be/);
    expect(evaluateCheck("sum", "x", [rows, "amountMinor", "1200"]).message).toMatch(/^expected must be a finite number/);
    expect(evaluateCheck("sum", "x", [rows, "amountMinor", 1200, { tolerance: -1 }]).message).toMatch(/^tolerance must be/);
    expect(evaluateCheck("sum", "x", [rows, "amountMinor", 1200, { tolerence: 1 }]).message).toMatch(/^the fifth argument must be/);
  });

  it("rowCount, range (numbers and ISO dates), sameUnit, equal", () => {
    expect(evaluateCheck("rowCount", "all", [rows, { min: 3, max: 3 }])).toMatchObject({ ok: true, rows: 3 });
    expect(evaluateCheck("rowCount", "all", [rows, { min: 4 }])).toMatchObject({ ok: false, message: "3 rows, expected at least 4" });
    expect(evaluateCheck("rowCount", "all", [rows, {}]).ok).toBe(false);
    expect(evaluateCheck("range", "amounts", [rows.map((r) => r.amountMinor), { min: 0 }])).toMatchObject({
      ok: false,
      message: "value 2 is -50, outside at least 0",
    });
    expect(evaluateCheck("range", "january", [rows.map((r) => r.paid.at), { min: "2026-01-01", max: "2026-01-31T23:59:59Z" }]).ok).toBe(true);
    expect(evaluateCheck("range", "january", [["2026-02-01"], { min: "2026-01-01", max: "2026-01-31" }]).ok).toBe(false);
    expect(evaluateCheck("range", "january", [["next week"], { min: "2026-01-01" }]).message).toMatch(/^value 0 is not an ISO 8601 date/);
    expect(evaluateCheck("sameUnit", "currency", [rows, "currency"])).toMatchObject({ ok: true, message: 'all 3 rows in "EUR"' });
    expect(evaluateCheck("sameUnit", "currency", [[...rows, { currency: "USD" }], "currency"])).toMatchObject({
      ok: false,
      message: '2 different values of currency: "EUR" (3), "USD" (1)',
    });
    expect(evaluateCheck("sameUnit", "currency", [[], "currency"]).ok).toBe(false);
    expect(
      evaluateCheck("equal", "totals", [
        { a: 1, b: [2] },
        { b: [2], a: 1 },
      ]).ok,
    ).toBe(true);
    expect(evaluateCheck("equal", "totals", [1200, 1290])).toMatchObject({ ok: false, message: "1200, expected 1290" });
    expect(evaluateCheck("equal", "totals", [1200]).ok).toBe(false);
  });

  it("the same rows checked twice have the same key; quoted values are made inert", () => {
    const a = evaluateCheck("rowCount", "a", [rows, { min: 1 }]);
    const b = evaluateCheck("sum", "b", [rows, "amountMinor", 1200]);
    expect(a.rowsKey).toBe(b.rowsKey);
    const escaped = evaluateCheck("equal", "x", ["\u001b[31mred", "z"]);
    expect(escaped.message).toContain("red");
    expect(escaped.message).not.toContain("\u001b");
  });

  it("a value too long to quote is described, never cut: no fragment of a name or an address reaches the message", () => {
    const people = Array.from({ length: 5 }, (_, i) => ({ name: `Alice Smith${i}`, address: `${i} Long Street, Springfield` }));
    const cases = [
      { check: evaluateCheck("equal", "x", [people, []]), shape: "an array of 5 items, expected []" },
      { check: evaluateCheck("rowCount", "y", [{ customers: people }, { min: 1 }]), shape: "rows must be an array, got an object with 1 keys" },
      {
        check: evaluateCheck("equal", "z", ["Alice Smith, 4 Long Street, Springfield, and the rest of a long address line, Greater Springfield", "x"]),
        shape: "a string of 97 characters",
      },
    ];
    for (const { check, shape } of cases) {
      expect(check.message).toContain(shape);
      expect(check.message).not.toMatch(/Alice|Street/);
    }
    expect(evaluateCheck("equal", "w", [{ name: "Alice Smith" }, {}]).message).toContain('{"name":"Alice Smith"}');
  });
});
