/** A timestamp shown in UTC, with the machine-readable value for assistive tech. */
export function Time({ iso }: { iso: string }) {
  return <time dateTime={iso}>{iso.replace("T", " ").slice(0, 19)} UTC</time>;
}
