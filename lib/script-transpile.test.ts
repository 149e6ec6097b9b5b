/**
 * A stack of the JavaScript a TypeScript script runs as names the lines and columns the agent
 * wrote: the emitter drops blank lines, comments' neighbours and type-only statements, which moved
 * every later position.
 */
import { describe, expect, it } from "vitest";
import ts from "typescript";
import { inSubmittedPositions, TRANSPILE_OPTIONS } from "./script-transpile";

const CODE = [
  "// Totals per currency.", // 1
  "interface Row { currency: string; amount: number }", // 2
  "", // 3
  "type Totals = Record<string, number>;", // 4
  "const rows: Row[] = [{ currency: 'EUR', amount: 1 }];", // 5
  "", // 6
  "const totals: Totals = {};", // 7
  "for (const row of rows) totals[row.currency] = (totals[row.currency] ?? 0) + row.amount;", // 8
  "", // 9
  "throw new Error(`no ${String(totals.USD)} dollars`);", // 10
].join("\n");

/** Where `needle` is in the emitted JavaScript, 1-based, as a stack would name it. */
function emittedPosition(needle: string): string {
  const javascript = ts.transpileModule(CODE, { compilerOptions: TRANSPILE_OPTIONS, fileName: "script.ts" }).outputText;
  const lines = javascript.split("\n");
  const line = lines.findIndex((text) => text.includes(needle));
  return `script.mjs:${line + 1}:${lines[line]!.indexOf(needle) + 1}`;
}

describe("inSubmittedPositions", () => {
  it("rewrites each position of a stack to the TypeScript the agent wrote", () => {
    const thrown = emittedPosition("new Error");
    const loop = emittedPosition("totals[row.currency] =");
    // The premise: the emitted lines are not the written ones.
    expect(thrown).not.toBe("script.mjs:10:7");
    const stack = `    at airlockScript (file:///sandbox/code/${thrown})\n    at inner (file:///sandbox/code/${loop})`;
    expect(inSubmittedPositions(stack, CODE)).toBe(
      "    at airlockScript (file:///sandbox/code/script.mjs:10:7)\n    at inner (file:///sandbox/code/script.mjs:8:25)",
    );
  });

  it("leaves text without a position, and a position past the emitted code, as they are", () => {
    expect(inSubmittedPositions("Error: no stack", CODE)).toBe("Error: no stack");
    expect(inSubmittedPositions("at x (script.mjs:400:1)", CODE)).toBe("at x (script.mjs:400:1)");
  });
});
