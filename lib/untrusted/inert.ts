/**
 * Making script and tool text inert for people to read.
 *
 * Guarantees: the output contains no ANSI/VT escape sequences (removed with their parameters; a
 * lone ESC stays and is marked), and keeps every other invisible or direction-changing character
 * exactly as it came — C0/C1 controls except newline and tab, bidi controls, U+2028/U+2029,
 * zero-width and default-ignorable characters (lib/untrusted/invisible.ts) — so that the console
 * renders each one as a marker element (components/ui/inert.tsx) and a reviewer sees a
 * Trojan-Source trick instead of being fooled by it. Markers are made at render time, from the
 * characters themselves, so no text an agent writes (such as "⟦U+202E⟧") can pass for one.
 * Unlike lib/sandbox/sanitize (which removes such characters before an agent sees them), this
 * keeps the evidence visible. Code views do not use inertText: they show the code that runs,
 * ESC included (lib/review/highlight.ts).
 *
 * It does not make text safe to put in HTML, nor to render as a bare text node: callers render
 * the result through components/ui/inert.tsx only. Pure and dependency-free, so client
 * components may use it too.
 */
import { cutAt, hasHidden } from "./invisible";

// CSI / OSC / DCS-like / two-character ESC sequences, and the 8-bit CSI.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[PX^_][^\u001b]*(?:\u001b\\)?|[@-Z\\-_])|\u009b[0-?]*[ -/]*[@-~]/g;

/** Text with escape sequences removed (hidden characters kept for the markers); capped at maxChars. */
export function inertText(text: string, maxChars = 200_000): string {
  const shown = text.replace(ANSI, "");
  if (shown.length <= maxChars) return shown;
  const cut = cutAt(shown, maxChars);
  return `${cut}… (${shown.length - cut.length} more characters not shown)`;
}

/** Code as it runs, for code views: nothing removed (ESC is marked, not stripped), only capped. */
export function inertCode(text: string, maxChars = 200_000): string {
  if (text.length <= maxChars) return text;
  const cut = cutAt(text, maxChars);
  return `${cut}… (${text.length - cut.length} more characters not shown)`;
}

/** True if the text carries characters the console marks (for a warning next to the code). */
export function hasHiddenCharacters(text: string): boolean {
  return hasHidden(text);
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
