/**
 * A TypeScript skill whose argument feeds a tool parameter with fixed values (the ledger's invoice
 * `status`), through the real drafting, inlining and analysis: TypeScript would type the JSON
 * argument `{"status":"paid"}` as `{ status: string }`, so every run of a published skill was denied
 * as a type error in code the agent never wrote. run_skill's script and a script's
 * `skills.<name>({…})` keep the arguments' literal types; a value the tool does not take is still
 * a type error, naming it.
 */
import { describe, expect, it } from "vitest";
import type { ToolFacts } from "@/lib/contracts/tools";
import { analyzeScript } from "@/lib/intake/analyze";
import { holeSites } from "@/lib/script-fingerprint";
import { inlineSkills } from "./catalog";
import { skillCode, skillRunScript } from "./draft";
import type { PublishedSkill } from "./service";

const TOOLS: ToolFacts[] = [
  { server: "ledger", name: "listInvoices", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "internal", quarantined: false },
];
const DECLARATIONS = `declare const tools: { ledger: { listInvoices(args: { status: "draft" | "open" | "paid" | "void"; limit?: number }): Promise<{ invoices: { id: string }[] }> } };`;

const PATTERN = `const { invoices } = await tools.ledger.listInvoices({ status: "open", limit: 500 });\nreturn invoices.length;`;
const statusHole = holeSites(PATTERN, "typescript").findIndex((site) => PATTERN.slice(site.start, site.end) === '"open"');
const code = skillCode(PATTERN, "typescript", [{ hole: statusHole, name: "status" }]);
const skill: PublishedSkill = {
  id: "00000000-0000-4000-8000-000000000001",
  name: "countInvoicesByStatus",
  version: 1,
  description: "count",
  language: "typescript",
  code,
  inputSchema: { type: "object", properties: { status: { type: "string" } }, required: ["status"], additionalProperties: false },
  outputSchema: { type: "number" },
};

const typeErrors = (script: string) =>
  analyzeScript({ code: script, language: "typescript", tools: TOOLS, declarations: DECLARATIONS, allowedPackages: [] }).findings.filter((f) =>
    f.code.endsWith("type_error"),
  );

describe("a skill's arguments keep their literal types", () => {
  it("in run_skill's script", () => {
    expect(statusHole).toBeGreaterThanOrEqual(0);
    expect(typeErrors(skillRunScript(skill.code, { status: "paid" }, "typescript"))).toEqual([]);
  });

  it("in a script calling skills.<name>({…}), at each call", () => {
    const inlined = inlineSkills(
      `const open = await skills.countInvoicesByStatus({ status: "open" });\nconst both = await skills.countInvoicesByStatus({ status: open > 0 ? "paid" : "void" });\nreturn [open, both];`,
      "typescript",
      new Map([[skill.name, skill]]),
    );
    expect(inlined.code).toContain('({ status: "open" } as const)');
    expect(typeErrors(inlined.code)).toEqual([]);
  });

  it("and a value the tool does not take is still a type error, naming it", () => {
    expect(typeErrors(skillRunScript(skill.code, { status: "bogus" }, "typescript"))).toEqual([
      expect.objectContaining({ message: expect.stringContaining('"bogus"') }),
    ]);
  });
});
