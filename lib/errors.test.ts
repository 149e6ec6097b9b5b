import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { codesMarkdown, FINDING_RULES, RUN_ERROR_CODES } from "./errors";

describe("code registries", () => {
  it("docs/codes.md is rendered from the registries (run `npm run docs:codes` after adding a code)", () => {
    const docs = readFileSync(new URL("../docs/codes.md", import.meta.url), "utf8");
    expect(docs).toBe(codesMarkdown());
    for (const code of [...RUN_ERROR_CODES, ...Object.keys(FINDING_RULES)]) expect(docs).toContain(`\`${code}\``);
  });
});
