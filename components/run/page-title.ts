/** A run page's tab title, "Run 3f2a9c1e": tabs of several runs told apart by the id's first characters (only when the URL holds a run id). */
export function runPageTitle(prefix: string, id: string): string {
  return /^[0-9a-f]{8}-/i.test(id) ? `${prefix} ${id.slice(0, 8)}` : prefix;
}
