/**
 * Cleaning text that came from a script or a tool before anyone displays it.
 *
 * Guarantees: the output has no ANSI/VT escape sequences, no C0 control characters other than
 * newline and tab, no C1 controls, no bidirectional overrides/isolates/marks, no zero-width
 * characters, and is at most `maxChars` long. It does NOT make the text trustworthy: callers keep
 * marking it `untrusted`. `looksLikeInstructions` is a heuristic flag for reviewers and release
 * policies, not a filter: it reads the text as a model would (compatibility forms folded, hidden
 * characters dropped, any run of whitespace as one space), so a line break or a non-breaking space
 * inside a phrase does not hide it.
 */
import type { JsonValue } from "./safe-json";

// CSI / OSC / other ESC sequences first, so their parameters do not survive as visible text.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[PX^_][^\u001b]*(?:\u001b\\)?|[@-Z\\-_])|\u009b[0-?]*[ -/]*[@-~]/g;
// C0 except \t \n, DEL, C1, bidi embeddings/overrides/isolates/marks, zero-width and BOM.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff]/g;

export function sanitizeText(text: string, maxChars = 100_000): string {
  const cleaned = text.replace(ANSI, "").replace(CONTROL, "");
  return cleaned.length > maxChars ? cleaned.slice(0, maxChars) : cleaned;
}

/** Sanitizes every string (values and keys) of a JSON value; objects stay null-prototype. */
export function sanitizeJson(value: JsonValue): JsonValue {
  if (typeof value === "string") return sanitizeText(value, Number.MAX_SAFE_INTEGER);
  if (Array.isArray(value)) return value.map(sanitizeJson);
  if (value !== null && typeof value === "object") {
    const out = Object.create(null) as { [key: string]: JsonValue };
    for (const [key, v] of Object.entries(value)) {
      Object.defineProperty(out, sanitizeText(key, 1_000), { value: sanitizeJson(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

const INSTRUCTION_LIKE = [
  /\bignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier) (?:instructions|messages|rules)\b/i,
  /\bdisregard (?:all |the )?(?:previous|prior|above) /i,
  /\byou are now\b/i,
  /\b(?:system|developer) prompt\b/i,
  /\bnew instructions?:/i,
  /<\/?(?:system|assistant|instructions?)>/i,
  /\bdo not (?:tell|inform) the user\b/i,
];

/**
 * Printable ASCII without space or `<`: every pattern above needs a space or a `<`, and such text
 * reads the same folded (NFKC changes no ASCII), so it cannot match. Most of a tool's data is such
 * text (ids, codes, dates, amounts); it is not read again.
 */
const CANNOT_MATCH = /^[!-;=-~]*$/;

export function looksLikeInstructions(text: string): boolean {
  if (CANNOT_MATCH.test(text)) return false;
  const read = text.normalize("NFKC").replace(CONTROL, "").replace(/\s+/gu, " ");
  return INSTRUCTION_LIKE.some((re) => re.test(read));
}

/** Whether any string of a JSON value (object keys included) looks like instructions to a model. */
export function jsonLooksLikeInstructions(value: unknown): boolean {
  if (typeof value === "string") return looksLikeInstructions(value);
  if (Array.isArray(value)) return value.some(jsonLooksLikeInstructions);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).some(([key, item]) => looksLikeInstructions(key) || jsonLooksLikeInstructions(item));
  }
  return false;
}
