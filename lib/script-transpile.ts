/**
 * How a TypeScript script becomes the JavaScript that runs, and how a position in that JavaScript
 * is found again in the TypeScript the agent wrote.
 *
 * - TRANSPILE_OPTIONS: the one emit setting (lib/intake/typecheck.ts transpileScript emits with
 *   it, beside the checker's settings).
 * - inSubmittedPositions(text, code): `script.mjs:L:C` positions in `text` (a stack) rewritten to
 *   the lines and columns of the TypeScript `code`. The emitter drops blank lines and type-only
 *   statements, so a stack of the JavaScript named lines the agent did not write; the same
 *   transpile, with a source map, says where each emitted position came from. A position the map
 *   does not cover is left as it is. Costs one transpile: meant for the rare text that holds one.
 */
import ts from "typescript";

export const TRANSPILE_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2023,
  module: ts.ModuleKind.ESNext,
  moduleDetection: ts.ModuleDetectionKind.Force,
  verbatimModuleSyntax: true,
  removeComments: false,
};

const POSITION = /script\.mjs:(\d+):(\d+)/g;
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** One mapping segment: the emitted column, and the source line and column it came from (all 0-based). */
type Segment = { column: number; sourceLine: number; sourceColumn: number };

export function inSubmittedPositions(text: string, code: string): string {
  if (!/script\.mjs:\d+:\d+/.test(text)) return text;
  const map = ts.transpileModule(code, { compilerOptions: { ...TRANSPILE_OPTIONS, sourceMap: true }, fileName: "script.ts" }).sourceMapText;
  if (!map) return text;
  const lines = decodeMappings((JSON.parse(map) as { mappings: string }).mappings);
  return text.replace(POSITION, (whole, line: string, column: string) => {
    const at = sourcePosition(lines, Number(line), Number(column));
    return at ? `script.mjs:${at.line}:${at.column}` : whole;
  });
}

/** The source position of 1-based emitted `line`:`column`: the last segment at or before it, moved by the distance past it. */
function sourcePosition(lines: readonly Segment[][], line: number, column: number): { line: number; column: number } | null {
  const segments = lines[line - 1];
  if (!segments || segments.length === 0) return null;
  const at = column - 1;
  const segment = segments.findLast((s) => s.column <= at) ?? segments[0]!;
  return { line: segment.sourceLine + 1, column: segment.sourceColumn + Math.max(0, at - segment.column) + 1 };
}

/** A source map's `mappings` (base64 VLQ, one group per emitted line) as segments with a source position. */
function decodeMappings(mappings: string): Segment[][] {
  let sourceLine = 0;
  let sourceColumn = 0;
  return mappings.split(";").map((group) => {
    let column = 0;
    const segments: Segment[] = [];
    for (const encoded of group.split(",")) {
      if (encoded === "") continue;
      const fields = decodeVlq(encoded);
      column += fields[0] ?? 0;
      if (fields.length < 4) continue;
      sourceLine += fields[2]!;
      sourceColumn += fields[3]!;
      segments.push({ column, sourceLine, sourceColumn });
    }
    return segments;
  });
}

function decodeVlq(encoded: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const character of encoded) {
    const digit = BASE64.indexOf(character);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return values;
}
