/**
 * Which characters a reviewer cannot see, and where JavaScript ends a line: the one definition
 * that the console's markers, the code view's line numbers, the line diff and analysis's
 * `invisible_character` finding share, so the page and the findings never disagree.
 *
 * Marked ("hidden") characters: every code point of
 *   /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u
 * (controls including ESC, format and bidi characters, U+2028/U+2029, soft hyphen, fillers, tags,
 * variation selectors…) except "\n", "\t", and a "\r" directly followed by "\n" (a Windows line
 * end). A lone "\r" is marked: JavaScript ends a line there, many viewers do not.
 *
 * Line terminators are JavaScript's own (ECMA-262 LineTerminatorSequence): "\r\n", "\n", "\r",
 * U+2028, U+2029 — the same set TypeScript's line map uses for findings' line numbers.
 *
 * Guarantees: pure and dependency-free (client components use it too); works on code points, so an
 * astral character (a surrogate pair, e.g. the tag U+E0041) is one segment and one marker; the
 * segments of a text, joined, are the text itself. A marker is data (`{ codePoint }`), which the
 * console renders as an element (components/ui/inert.tsx): no text an agent writes, such as
 * "U+2028" or "⟦U+2028⟧", can produce one.
 */

const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const HIDDEN_ALL = /\r\n|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

/** JavaScript's line terminators, longest first. */
export const JS_LINE_TERMINATOR = /\r\n|[\n\r\u2028\u2029]/g;

export type Segment = { kind: "text"; text: string } | { kind: "marker"; codePoint: number; label: string; name: string };

/** "U+2028", "U+E0041". */
export function codePointLabel(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}

const NAMES: Record<number, string> = {
  0x00: "NULL",
  0x07: "BELL",
  0x08: "BACKSPACE",
  0x0b: "LINE TABULATION",
  0x0c: "FORM FEED",
  0x0d: "CARRIAGE RETURN",
  0x1b: "ESCAPE",
  0x7f: "DELETE",
  0x85: "NEXT LINE",
  0x9b: "CONTROL SEQUENCE INTRODUCER",
  0xad: "SOFT HYPHEN",
  0x034f: "COMBINING GRAPHEME JOINER",
  0x061c: "ARABIC LETTER MARK",
  0x115f: "HANGUL CHOSEONG FILLER",
  0x1160: "HANGUL JUNGSEONG FILLER",
  0x17b4: "KHMER VOWEL INHERENT AQ",
  0x17b5: "KHMER VOWEL INHERENT AA",
  0x180e: "MONGOLIAN VOWEL SEPARATOR",
  0x200b: "ZERO WIDTH SPACE",
  0x200c: "ZERO WIDTH NON-JOINER",
  0x200d: "ZERO WIDTH JOINER",
  0x200e: "LEFT-TO-RIGHT MARK",
  0x200f: "RIGHT-TO-LEFT MARK",
  0x2028: "LINE SEPARATOR",
  0x2029: "PARAGRAPH SEPARATOR",
  0x202a: "LEFT-TO-RIGHT EMBEDDING",
  0x202b: "RIGHT-TO-LEFT EMBEDDING",
  0x202c: "POP DIRECTIONAL FORMATTING",
  0x202d: "LEFT-TO-RIGHT OVERRIDE",
  0x202e: "RIGHT-TO-LEFT OVERRIDE",
  0x2060: "WORD JOINER",
  0x2061: "FUNCTION APPLICATION",
  0x2062: "INVISIBLE TIMES",
  0x2063: "INVISIBLE SEPARATOR",
  0x2064: "INVISIBLE PLUS",
  0x2066: "LEFT-TO-RIGHT ISOLATE",
  0x2067: "RIGHT-TO-LEFT ISOLATE",
  0x2068: "FIRST STRONG ISOLATE",
  0x2069: "POP DIRECTIONAL ISOLATE",
  0x3164: "HANGUL FILLER",
  0xfeff: "ZERO WIDTH NO-BREAK SPACE",
  0xffa0: "HALFWIDTH HANGUL FILLER",
  0xfff9: "INTERLINEAR ANNOTATION ANCHOR",
  0xfffa: "INTERLINEAR ANNOTATION SEPARATOR",
  0xfffb: "INTERLINEAR ANNOTATION TERMINATOR",
  0xe0001: "LANGUAGE TAG",
  0xe007f: "CANCEL TAG",
};

/** The Unicode name of a hidden character where Airlock knows it, else a description of its kind. */
export function codePointName(codePoint: number): string {
  const known = NAMES[codePoint];
  if (known) return known;
  if (codePoint <= 0x1f || (codePoint >= 0x7f && codePoint <= 0x9f)) return "control character";
  if (codePoint >= 0xfe00 && codePoint <= 0xfe0f) return `VARIATION SELECTOR-${codePoint - 0xfe00 + 1}`;
  if (codePoint >= 0xe0100 && codePoint <= 0xe01ef) return `VARIATION SELECTOR-${codePoint - 0xe0100 + 17}`;
  if (codePoint >= 0xe0020 && codePoint <= 0xe007e) {
    const ascii = String.fromCodePoint(codePoint - 0xe0000);
    if (/[A-Z]/.test(ascii)) return `TAG LATIN CAPITAL LETTER ${ascii}`;
    if (/[a-z]/.test(ascii)) return `TAG LATIN SMALL LETTER ${ascii.toUpperCase()}`;
    if (/[0-9]/.test(ascii)) return `TAG DIGIT ${"ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE".split(" ")[Number(ascii)]}`;
    return `TAG "${ascii}"`;
  }
  return /\p{Cf}/u.test(String.fromCodePoint(codePoint)) ? "invisible format character" : "invisible character";
}

/** "U+2028 LINE SEPARATOR". */
export function describeCodePoint(codePoint: number): string {
  return `${codePointLabel(codePoint)} ${codePointName(codePoint)}`;
}

/** Whether one character (a code point) is shown as a marker; `next` decides a "\r". */
export function isHidden(char: string, next = ""): boolean {
  if (char === "\n" || char === "\t") return false;
  if (char === "\r") return next !== "\n";
  return HIDDEN.test(char);
}

export type HiddenCharacter = { codePoint: number; index: number };

/** Every hidden character of `text` with its UTF-16 offset, in order (at most `limit`). */
export function findHidden(text: string, limit = Number.POSITIVE_INFINITY): HiddenCharacter[] {
  const found: HiddenCharacter[] = [];
  for (const match of text.matchAll(HIDDEN_ALL)) {
    if (found.length >= limit) break;
    const char = match[0];
    if (char === "\r\n" || char === "\n" || char === "\t") continue;
    found.push({ codePoint: char.codePointAt(0)!, index: match.index });
  }
  return found;
}

export function hasHidden(text: string): boolean {
  return findHidden(text, 1).length > 0;
}

/** The text cut into plain runs and one marker per hidden code point; joined back, it is `text`. */
export function segments(text: string): Segment[] {
  const out: Segment[] = [];
  let from = 0;
  for (const { codePoint, index } of findHidden(text)) {
    if (index > from) out.push({ kind: "text", text: text.slice(from, index) });
    out.push({ kind: "marker", codePoint, label: codePointLabel(codePoint), name: codePointName(codePoint) });
    from = index + (codePoint > 0xffff ? 2 : 1);
  }
  if (from < text.length) out.push({ kind: "text", text: text.slice(from) });
  return out;
}

/** The text a marker stands for (for joining segments back). */
export function segmentText(segment: Segment): string {
  return segment.kind === "text" ? segment.text : String.fromCodePoint(segment.codePoint);
}

/**
 * The lines of a script as JavaScript counts them (line N of the result is line N of findings).
 * "\n" and "\r\n" are dropped; a line ended by U+2028, U+2029 or a lone "\r" keeps that character
 * at its end, so the reviewer sees a marker where the hidden line break is.
 */
export function splitJsLines(text: string): string[] {
  const lines: string[] = [];
  let from = 0;
  for (const match of text.matchAll(JS_LINE_TERMINATOR)) {
    const end = match.index + match[0].length;
    lines.push(match[0] === "\n" || match[0] === "\r\n" ? text.slice(from, match.index) : text.slice(from, end));
    from = end;
  }
  lines.push(text.slice(from));
  return lines;
}

/** `text` cut to at most `max` UTF-16 units without splitting a surrogate pair. */
export function cutAt(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
