/**
 * Where to go after signing in: a path on this site, or "/". Refuses (answers "/") anything else —
 * another origin (`//evil`, `/\evil`, which browsers read as `//evil`), control characters, NUL,
 * spaces and non-ASCII (a browser sends the path percent-encoded), and overlong values.
 */
export function safeRedirect(value: unknown): string {
  return typeof value === "string" && /^\/(?![/\\])[\x21-\x7e]{0,2000}$/.test(value) ? value : "/";
}
