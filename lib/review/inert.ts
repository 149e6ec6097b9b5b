/**
 * Making script and tool text inert for people to read (issue 5, "rendered inert").
 *
 * Guarantees: the output contains no ANSI/VT escape sequences (removed with their parameters), and
 * every other invisible or direction-changing character — C0/C1 controls except newline and tab,
 * bidi embeddings/overrides/isolates/marks (U+202A–U+202E, U+2066–U+2069, U+200E/F, U+061C),
 * zero-width characters and BOM — is replaced by a visible marker such as ⟦U+202E⟧, so a
 * reviewer sees a Trojan-Source trick instead of being fooled by it. Unlike lib/sandbox/sanitize
 * (which removes such characters before an agent sees them), this keeps the evidence visible.
 *
 * It does not make text safe to put in HTML: callers render the result as React text nodes only.
 * Pure and dependency-free, so client components may use it too.
 */

// CSI / OSC / DCS-like / two-character ESC sequences, and the 8-bit CSI.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[PX^_][^\u001b]*(?:\u001b\\)?|[@-Z\\-_])|\u009b[0-?]*[ -/]*[@-~]/g;
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff]/g;

export function marker(char: string): string {
  return `⟦U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟧`;
}

/** Text with escape sequences removed and invisible controls made visible; capped at maxChars. */
export function inertText(text: string, maxChars = 200_000): string {
  const shown = text.replace(ANSI, "").replace(INVISIBLE, marker);
  return shown.length > maxChars ? `${shown.slice(0, maxChars)}… (${shown.length - maxChars} more characters not shown)` : shown;
}

/** True if the text carries characters inertText would mark (for a warning next to the code). */
export function hasHiddenCharacters(text: string): boolean {
  INVISIBLE.lastIndex = 0;
  const found = INVISIBLE.test(text.replace(ANSI, ""));
  INVISIBLE.lastIndex = 0;
  return found;
}

/** Pretty JSON of any stored value, made inert. */
export function inertJson(value: unknown, maxChars = 64_000): string {
  let text: string;
  try {
    text = JSON.stringify(value ?? null, null, 2) ?? "null";
  } catch {
    text = String(value);
  }
  return inertText(text, maxChars);
}
