/**
 * A small line diff (longest common subsequence) for comparing an agent's attempts at a script.
 * Pure; quadratic in lines, so inputs are capped: beyond MAX_DIFF_LINES per side the diff gives up
 * and says so rather than burning the request.
 *
 * Lines are JavaScript's lines (lib/untrusted/invisible.ts splitJsLines), as on the code view: a line
 * ended by U+2028, U+2029 or a lone "\r" keeps that character, so the diff shows its marker.
 * Texts are the lines as they are; render them through components/ui/inert.tsx.
 */
import { splitJsLines } from "./invisible";

export type DiffLine = { kind: "same" | "added" | "removed"; text: string; oldLine?: number; newLine?: number };
export type LineDiff = { lines: DiffLine[]; added: number; removed: number; tooLarge: boolean };

export const MAX_DIFF_LINES = 2_000;

export function diffLines(before: string, after: string): LineDiff {
  const a = splitJsLines(before);
  const b = splitJsLines(after);
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return { lines: [], added: 0, removed: 0, tooLarge: true };
  // Trim the common prefix and suffix first: attempts usually differ in a few lines.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  // lcs[i][j] = length of the LCS of midA[i..] and midB[j..]
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = midA[i] === midB[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const lines: DiffLine[] = [];
  for (let k = 0; k < start; k++) lines.push({ kind: "same", text: a[k]!, oldLine: k + 1, newLine: k + 1 });
  let i = 0;
  let j = 0;
  let added = 0;
  let removed = 0;
  while (i < n || j < m) {
    if (i < n && j < m && midA[i] === midB[j]) {
      lines.push({ kind: "same", text: midA[i]!, oldLine: start + i + 1, newLine: start + j + 1 });
      i++;
      j++;
    } else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      lines.push({ kind: "removed", text: midA[i]!, oldLine: start + i + 1 });
      removed++;
      i++;
    } else {
      lines.push({ kind: "added", text: midB[j]!, newLine: start + j + 1 });
      added++;
      j++;
    }
  }
  for (let k = 0; k < a.length - endA; k++) lines.push({ kind: "same", text: a[endA + k]!, oldLine: endA + k + 1, newLine: endB + k + 1 });
  return { lines, added, removed, tooLarge: false };
}
