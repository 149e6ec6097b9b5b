/**
 * The names a request sends (a form's fields, a query's parameters), held to the ones its door
 * takes: the first name it does not take, or the first sent twice that may not repeat. A value
 * the door would silently ignore, or one of two it would silently choose between, is a guess;
 * each door refuses what this finds in its own words (lib/auth/user-action.ts, user-route.ts).
 */
export type NameProblem = { name: string; problem: "unknown" | "repeated" };

export function closedNames(names: Iterable<string>, takes: (name: string) => boolean, repeats: (name: string) => boolean = () => false): NameProblem | null {
  const seen = new Set<string>();
  for (const name of names) {
    if (!takes(name)) return { name, problem: "unknown" };
    if (seen.has(name) && !repeats(name)) return { name, problem: "repeated" };
    seen.add(name);
  }
  return null;
}
