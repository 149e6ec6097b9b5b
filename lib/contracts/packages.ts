/**
 * Packages a script may import: the default allowlist and the one parser of import specifiers,
 * used by analysis (findings) and by the sandbox (resolution and refusal).
 */

/** The allowlist when airlock.config.json names none. */
export const DEFAULT_PACKAGES = ["csv-parse", "decimal.js"] as const;

/**
 * `node:fs/promises` → `fs/promises`; `@scope/pkg/sub` and `pkg/sub` unchanged; paths and URLs
 * (`./x`, `/x`, `file:`, `data:`, `https:`) → undefined.
 */
export function bareSpecifier(specifier: string): string | undefined {
  const bare = specifier.startsWith("node:") ? specifier.slice("node:".length) : specifier;
  if (bare === "" || bare.startsWith(".") || bare.startsWith("/") || bare.includes(":")) return undefined;
  return bare;
}

/** `@scope/pkg/sub` → `@scope/pkg`, `pkg/sub` → `pkg`. */
export function packageName(bare: string): string {
  const parts = bare.split("/");
  return bare.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}
