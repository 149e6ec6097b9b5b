/**
 * Limits on the shape of policy text, so that no text an admin can type reaches the Cedar engine in
 * a form that breaks it. Cedar's WebAssembly build parses and evaluates recursively on a fixed
 * stack in its linear memory: measured, 150 nested brackets, about 1,000 nested `if`s or 3,000
 * chained `+` overflow it while parsing, and a chain of about 400 operators while evaluating. The
 * overflow is `memory access out of bounds` (or a RangeError), and it leaves the one engine every
 * policy decision of the process shares unusable: each later decision fails, and so fails closed.
 *
 * Guarantees:
 * - `textShapeProblem` reads the text before Cedar does (strings and comments skipped, a comment
 *   ending at a line feed or a carriage return, as Cedar's does) and names,
 *   with its line and column, the first bracket nested past MAX_BRACKET_DEPTH or the first policy
 *   with more than MAX_OPERATORS_PER_POLICY operators: within both, Cedar parses the text;
 * - `conditionDepthProblem` measures a parsed policy (Cedar's JSON form, ~2 levels per operator)
 *   and names one nested past MAX_CONDITION_DEPTH operators: within it, Cedar evaluates it.
 * Each limit is far below where the engine fails and far above what a policy needs (the shipped
 * ones nest 6 deep); a long list of alternatives belongs in a set: `[…].contains(x)`.
 */

export const MAX_BRACKET_DEPTH = 32;
export const MAX_OPERATORS_PER_POLICY = 1_000;
export const MAX_CONDITION_DEPTH = 100;

export type ShapeProblem = { message: string; offset: number };

const OPERATOR = /^(?:&&|\|\||==|!=|<=|>=|[<>+\-*!.]|if|then|else|in|has|like|is)$/;
const TOKEN = /"(?:[^"\\]|\\.)*"?|\/\/[^\n\r]*|[A-Za-z_][A-Za-z0-9_]*|\d+|&&|\|\||==|!=|<=|>=|\S/g;

export function textShapeProblem(text: string): ShapeProblem | null {
  let depth = 0;
  let operators = 0;
  for (const match of text.matchAll(TOKEN)) {
    const token = match[0];
    const offset = match.index;
    if (token.startsWith('"') || token.startsWith("//")) continue;
    if (token === "(" || token === "[" || token === "{") {
      if (++depth > MAX_BRACKET_DEPTH) {
        return { message: `brackets are nested more than ${MAX_BRACKET_DEPTH} deep here; write the condition flatter`, offset };
      }
    } else if (token === ")" || token === "]" || token === "}") {
      depth = Math.max(0, depth - 1);
    } else if (token === ";" && depth === 0) {
      operators = 0;
    } else if (OPERATOR.test(token) && ++operators > MAX_OPERATORS_PER_POLICY) {
      return {
        message: `this policy has more than ${MAX_OPERATORS_PER_POLICY} operators; split it, or test a set: ["a", "b"].contains(x)`,
        offset,
      };
    }
  }
  return null;
}

/** Whether a parsed policy (Cedar's JSON form) nests past MAX_CONDITION_DEPTH operators; the message, or null. */
export function conditionDepthProblem(policyJson: unknown): string | null {
  const limit = 2 * MAX_CONDITION_DEPTH + 10;
  const stack: [unknown, number][] = [[policyJson, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (depth > limit) {
      return `its condition nests more than ${MAX_CONDITION_DEPTH} operators deep (a long chain of && , || or + nests one per operator); split it, or test a set: ["a", "b"].contains(x)`;
    }
    if (value !== null && typeof value === "object") for (const item of Object.values(value)) stack.push([item, depth + 1]);
  }
  return null;
}
