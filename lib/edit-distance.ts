/** Edit distance (insertions, deletions, substitutions), for naming what a misspelt name meant. Shared by every layer, as nearestName is. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** A name as a person means it: case, `_`, `-`, `.` and spaces ignored (run_id, runId and RUNID are one). */
const plainName = (text: string) => text.toLowerCase().replace(/[-_.\s]/g, "");

/**
 * The candidate a misspelt `name` most likely meant: the same name spelt otherwise, else one within
 * two edits, else (with `parts`) one it is the start or end of (`id` for runId); null when none is.
 */
export function nearestName(name: string, candidates: readonly string[], options: { parts?: boolean } = {}): string | null {
  const plain = plainName(name);
  return (
    candidates.find((candidate) => plainName(candidate) === plain) ??
    candidates.find((candidate) => editDistance(plainName(candidate), plain) <= 2) ??
    (options.parts && plain.length >= 2
      ? candidates.find((candidate) => plainName(candidate).startsWith(plain) || plainName(candidate).endsWith(plain))
      : undefined) ??
    null
  );
}
