/**
 * What a skill's arguments carry from the tools they are passed to, without a database: where a
 * bound literal is a tool call's argument, and which of that argument's checks it keeps.
 */
import { describe, expect, it } from "vitest";
import { carriedConstraints, inputSchemaOf, toolArgumentSites, type SkillInput } from "./draft";

const LIST_INVOICES = {
  type: "object",
  properties: {
    status: { type: "string", enum: ["draft", "open", "paid", "void"] },
    limit: { type: "integer", minimum: 1, maximum: 500 },
    filter: { type: "object", properties: { currency: { type: "string", minLength: 3, maxLength: 3 } } },
  },
};

const input = (hole: number, type: SkillInput["type"], values: string[]): SkillInput => ({ hole, name: `p${hole + 1}`, type, values });

describe("a skill's arguments", () => {
  const code = [
    `const page = await tools.ledger.listInvoices({ status: "paid", limit: 50, filter: { currency: "EUR" } });`,
    `const note = \`seen ${"${page.invoices.length}"} invoices\`;`,
    `return { note, first: page.invoices[0], label: "x" };`,
  ].join("\n");

  it("are found where a tool call written out takes them, nested arguments included; other literals are no tool's argument", () => {
    const sites = toolArgumentSites(code, "javascript", [{ hole: 0 }, { hole: 1 }, { hole: 2 }, { hole: 3 }, { hole: 4 }]);
    expect(sites.get(0)).toEqual({ server: "ledger", tool: "listInvoices", path: ["status"] });
    expect(sites.get(1)).toEqual({ server: "ledger", tool: "listInvoices", path: ["limit"] });
    expect(sites.get(2)).toEqual({ server: "ledger", tool: "listInvoices", path: ["filter", "currency"] });
    // The template's text and the returned label are not passed to a tool.
    expect([...sites.keys()]).toEqual([0, 1, 2]);
  });

  it("carry the allowed values, bounds and lengths the tool requires, into the skill's input schema", () => {
    expect(carriedConstraints(LIST_INVOICES, ["status"], input(0, "string", ["paid", "open"]))).toEqual({ enum: ["draft", "open", "paid", "void"] });
    expect(carriedConstraints(LIST_INVOICES, ["limit"], input(1, "integer", ["50"]))).toEqual({ minimum: 1, maximum: 500 });
    expect(carriedConstraints(LIST_INVOICES, ["filter", "currency"], input(2, "string", ["EUR"]))).toEqual({ minLength: 3, maxLength: 3 });
    const constraints = new Map([[0, carriedConstraints(LIST_INVOICES, ["status"], input(0, "string", ["paid"]))]]);
    expect(inputSchemaOf([input(0, "string", ["paid"])], constraints).properties).toEqual({
      p1: { type: "string", enum: ["draft", "open", "paid", "void"], examples: ["paid"] },
    });
  });

  it("carry nothing the pattern's own runs broke, nor from a schema that does not say", () => {
    // A value a past run passed is outside them: its replay test would fail, so they are not carried.
    expect(carriedConstraints(LIST_INVOICES, ["status"], input(0, "string", ["paid", "archived"]))).toEqual({});
    expect(carriedConstraints(LIST_INVOICES, ["missing"], input(0, "string", ["x"]))).toEqual({});
    expect(carriedConstraints({ type: "object" }, ["status"], input(0, "string", ["x"]))).toEqual({});
    expect(carriedConstraints(null, ["status"], input(0, "string", ["x"]))).toEqual({});
  });
});
