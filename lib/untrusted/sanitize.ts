/**
 * Cleaning text that came from a script or a tool before anyone displays it.
 *
 * Guarantees: the output has no ANSI/VT escape sequences, no C0 control characters other than
 * newline and tab, no C1 controls, no bidirectional overrides/isolates/marks, no zero-width space
 * or BOM (the zero-width joiner and non-joiner stay: emoji and several scripts need them), no Unicode
 * tag characters (U+E0000 to U+E007F: invisible, yet a model reads them as the ASCII they mirror, so
 * they smuggle text; a subdivision flag emoji loses its region and shows as a black flag), no
 * supplementary variation selectors (U+E0100 to U+E01EF, which carry bytes the same way), and is
 * at most `maxChars` long. It does NOT make the text trustworthy: callers keep
 * marking it `untrusted`. `looksLikeInstructions` is a heuristic flag for reviewers and release
 * policies, not a filter: it reads the text as a model would (tag characters as the ASCII they
 * mirror, a run of variation selectors as the bytes it carries, compatibility forms folded, hidden characters dropped, any run of whitespace as one space, and once more with every separator
 * dropped and look-alike letters mapped to Latin), so a line break, a non-breaking space, a hyphen
 * between letters or a Cyrillic, Greek, Armenian or small-capital letter that passes for a Latin one
 * inside a phrase does not hide it. It knows common phrasings
 * (overriding earlier instructions, role markers with an order, chat-template tokens, the
 * commonest phrase in French, German, Spanish and Russian); text written to evade it, paraphrase
 * or another language can pass, so it never stands in for a review.
 */
import type { JsonValue } from "./safe-json";

// CSI / OSC / other ESC sequences first, so their parameters do not survive as visible text.
const ANSI = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[PX^_][^\u001b]*(?:\u001b\\)?|[@-Z\\-_])|\u009b[0-?]*[ -/]*[@-~]/g;
// C0 except \t \n, DEL, C1, bidi embeddings/overrides/isolates/marks, zero-width space and BOM.
// Zero-width (non-)joiners stay: emoji sequences and Persian, Arabic and Indic text need them.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff]/g;
// What a model does not see: the above, and the joiners, which can split a phrase.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff]/g;

// Unicode tag characters: invisible, each mirrors an ASCII character (U+E0041 reads as "A").
const TAGS = /[\u{E0000}-\u{E007F}]/gu;
const TAG_MIRRORS = /[\u{E0020}-\u{E007E}]/gu;
// Variation selectors, U+FE00–FE0F and U+E0100–E01EF: 256, so a run of them after any character
// can carry bytes, invisibly (a known smuggling scheme). The supplement's 240 are stripped (rare
// ideographic variants lose their variant); FE00–FE0F stay (emoji need FE0F) and carry only bytes 0–15.
const SELECTOR_SUPPLEMENT = /[\u{E0100}-\u{E01EF}]/gu;
const SELECTOR_RUN = /[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]{2,}/gu;

/** A run of variation selectors as the bytes it carries, read as UTF-8. */
function selectorText(run: string): string {
  const bytes = [...run].map((c) => {
    const point = c.codePointAt(0)!;
    return point <= 0xfe0f ? point - 0xfe00 : point - 0xe0100 + 16;
  });
  return ` ${new TextDecoder().decode(Uint8Array.from(bytes))} `;
}

export function sanitizeText(text: string, maxChars = 100_000): string {
  const cleaned = text.replace(ANSI, "").replace(CONTROL, "").replace(TAGS, "").replace(SELECTOR_SUPPLEMENT, "");
  return cleaned.length > maxChars ? cleaned.slice(0, maxChars) : cleaned;
}

/**
 * Sanitizes every string (values and keys) of a JSON value; objects stay null-prototype. Says
 * whether anything changed, so the caller can flag it. Never drops a value: two keys of an object
 * that read the same once sanitized (`"a\u200b"` or `"a\u200d"` and `"a"`), or a key longer than
 * 1,000 characters, throw instead.
 */
export function sanitizeJson(value: JsonValue): { value: JsonValue; changed: boolean } {
  let changed = false;
  const walk = (item: JsonValue): JsonValue => {
    if (typeof item === "string") {
      const text = sanitizeText(item, Number.MAX_SAFE_INTEGER);
      if (text !== item) changed = true;
      return text;
    }
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === "object") {
      const out = Object.create(null) as { [key: string]: JsonValue };
      const seen = new Set<string>();
      for (const [key, v] of Object.entries(item)) {
        if (key.length > 1_000) throw new Error(`a key is ${key.length} characters long; keys may have at most 1000`);
        const clean = sanitizeText(key);
        if (clean !== key) changed = true;
        // Keys that read the same (a joiner stays in one, but is invisible) would show a person two equal keys.
        const visible = clean.replace(HIDDEN, "");
        if (seen.has(visible))
          throw new Error(`two keys read the same once control, bidi and zero-width characters are removed (${JSON.stringify(visible.slice(0, 60))})`);
        seen.add(visible);
        Object.defineProperty(out, clean, { value: walk(v), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return item;
  };
  const out = walk(value);
  return { value: out, changed };
}

const INSTRUCTION_LIKE = [
  /\b(?:ignore|disregard|forget) (?:(?:all|any|the|your|my|of) )*(?:previous|prior|above|earlier|preceding|former) (?:instructions?|directions?|directives?|messages?|rules|prompts?|guidelines|commands?|context)\b/i,
  /\bdisregard (?:all |the )?(?:previous|prior|above) /i,
  /\bforget (?:everything|all|what) (?:you|that|above|i)\b/i,
  /\byou are now\b/i,
  /\bfrom now on,? you\b/i,
  /\b(?:system|developer) prompt\b/i,
  /\bnew (?:instructions?|task) ?:/i,
  // A role marker followed by an order, as a chat transcript would carry it.
  /\b(?:system|assistant|developer) ?: ?(?:new (?:task|instructions?)|you (?:must|are now|will now|should now)|ignore |forget |from now on|i will now)/i,
  /<\/?(?:system|assistant|instructions?)>/i,
  // Chat templates' control tokens: nothing but a prompt carries them.
  /<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[\/?INST\]|<<\/?SYS>>/i,
  /\bdo not (?:tell|inform) the user\b/i,
  // The commonest phrase in other languages.
  /\bignore[zr]? (?:toutes? )?(?:les |la )?(?:instructions?|consignes?) (?:précédentes?|antérieures?)/i,
  /\bignorier(?:e|en sie)? (?:alle )?(?:vorherigen|bisherigen|vorigen) (?:anweisungen|instruktionen|befehle)/i,
  /\bignora (?:todas )?las instrucciones anteriores/i,
  /игнорируй(?:те)? (?:все )?(?:предыдущие|прежние) (?:инструкции|указания)/i,
];

/**
 * The same phrases read with every separator dropped and look-alike letters mapped to Latin ones,
 * as a model still reads `IgnorePreviousInstructions`, `i-g-n-o-r-e previous instructions` or a
 * Latin word spelled with a Cyrillic or IPA letter.
 */
const SQUEEZED_LIKE = [
  /(?:ignore|disregard|forget)(?:all|any|the|your|my|of)*(?:previous|prior|above|earlier|preceding|former)(?:instruction|direction|directive|message|rule|prompt|guideline|command|context)/,
  /forget(?:everything|all)(?:you|that|above)/,
];
const LOOK_ALIKES: Record<string, string> = {
  "\u0430": "a",
  "\u0435": "e",
  "\u043e": "o",
  "\u0440": "p",
  "\u0441": "c",
  "\u0443": "y",
  "\u0445": "x",
  "\u0456": "i",
  "\u0458": "j",
  "\u0455": "s",
  "\u0501": "d",
  "\u0261": "g",
  "\u0131": "i",
  "\u03bf": "o",
  "\u03b1": "a",
  "\u03bd": "v",
  "\u03c1": "p",
  "\u03c4": "t",
  "\u03b9": "i",
  "\u03ba": "k",
  "\u0475": "v",
  "\u04bb": "h",
  "\u0432": "b",
  // Latin small capitals (ᴏ passes for o), Armenian and Cherokee letters that pass for Latin ones.
  "\u1d00": "a",
  "\u1d04": "c",
  "\u1d05": "d",
  "\u1d07": "e",
  "\u1d0a": "j",
  "\u1d0b": "k",
  "\u1d0d": "m",
  "\u1d0f": "o",
  "\u1d18": "p",
  "\u1d1b": "t",
  "\u1d1c": "u",
  "\u1d20": "v",
  "\u1d21": "w",
  "\u1d22": "z",
  "\u026a": "i",
  "\u0262": "g",
  "\u0274": "n",
  "\u0280": "r",
  "\u028f": "y",
  "\u029c": "h",
  "\u029f": "l",
  "\u0578": "n",
  "\u0581": "g",
  "\u0585": "o",
  "\u13a5": "i",
};
const LOOK_ALIKE = new RegExp(`[${Object.keys(LOOK_ALIKES).join("")}]`, "gu");

/**
 * Printable ASCII without a space, `<` or `[`: every phrase pattern needs one of them, and such
 * text reads the same folded (NFKC changes no ASCII). Most of a tool's data is such text (ids,
 * codes, dates, amounts); it is read again, squeezed, only when it holds the start of a squeezed
 * phrase.
 */
const NO_PHRASE = /^[!-;=-Z\\-~]*$/;
const SQUEEZED_START = /ignor|disregard|forget/i;

function squeezed(text: string): string {
  return text
    .toLowerCase()
    .replace(LOOK_ALIKE, (ch) => LOOK_ALIKES[ch]!)
    .replace(/[^a-z]+/g, "");
}

export function looksLikeInstructions(text: string): boolean {
  if (NO_PHRASE.test(text)) return SQUEEZED_START.test(text) && SQUEEZED_LIKE.some((re) => re.test(squeezed(text)));
  const read = text
    .replace(TAG_MIRRORS, (tag) => String.fromCharCode(tag.codePointAt(0)! - 0xe0000))
    .replace(SELECTOR_RUN, selectorText)
    .normalize("NFKC")
    .replace(HIDDEN, "")
    .replace(TAGS, "")
    .replace(/\s+/gu, " ");
  if (INSTRUCTION_LIKE.some((re) => re.test(read))) return true;
  // Again with look-alike letters read as the Latin ones they pass for (a Cyrillic о in "you are nоw"),
  // only when there are any: the text as written is read above, so Cyrillic text keeps its own patterns.
  const lower = read.toLowerCase();
  const folded = lower.replace(LOOK_ALIKE, (ch) => LOOK_ALIKES[ch]!);
  if (folded !== lower && INSTRUCTION_LIKE.some((re) => re.test(folded))) return true;
  const letters = squeezed(read);
  return SQUEEZED_LIKE.some((re) => re.test(letters));
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
