/**
 * Where a script that writes reads the clock or randomness (`Date.now()`, `new Date()`,
 * `Math.random()`, `crypto.randomUUID()`, `performance.now()`): a warning finding for reviewers and
 * the agent, since an approved run makes exactly the planned writes, and a write whose arguments
 * depend on such a value is made only if the run computes the same one after approval. The plan
 * preview runs the script twice and refuses plans the two runs disagree on (lib/runs/preview.ts);
 * a coarse value (the day, a time bucket) agrees there and can still change before approval, which
 * this warning is for.
 *
 * Found by name as written (one finding, at the first use); an aliased `Date` is not followed: this
 * informs, it decides nothing (a warning changes no policy outcome).
 */
import ts from "typescript";
import { finding, type Finding } from "@/lib/contracts/analysis";

/** `object.member` reads of the clock or randomness. */
const MEMBERS: Readonly<Record<string, readonly string[]>> = {
  Date: ["now"],
  Math: ["random"],
  performance: ["now"],
  crypto: ["randomUUID", "getRandomValues", "randomBytes", "randomInt"],
};

/** What the script reads of the clock or randomness first, and where; null when it reads none. */
function firstClockOrRandom(sf: ts.SourceFile): { what: string; node: ts.Node } | null {
  let found: { what: string; node: ts.Node } | null = null;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && MEMBERS[node.expression.text]?.includes(node.name.text)) {
      found = { what: `${node.expression.text}.${node.name.text}`, node };
      return;
    }
    // `new Date()` and `Date()` read the clock; `new Date(value)` does not.
    if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === "Date") {
      if ((node.arguments?.length ?? 0) === 0) {
        found = { what: ts.isNewExpression(node) ? "new Date()" : "Date()", node };
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The warning for a script that writes (`writes`) and reads the clock or randomness; none otherwise. */
export function clockOrRandomFindings(sf: ts.SourceFile, writes: boolean): Finding[] {
  if (!writes) return [];
  const first = firstClockOrRandom(sf);
  if (!first) return [];
  const { line, character } = sf.getLineAndCharacterOfPosition(first.node.getStart(sf));
  return [
    finding(
      "clock_or_random",
      `the script reads ${first.what} and calls tools that write: a write whose arguments depend on it is made only if the run computes the same value once approved (a day or a time bucket can change before then)`,
      line + 1,
      character + 1,
    ),
  ];
}
