/**
 * What a reviewer cannot see, as findings: every hidden character the console marks
 * (lib/untrusted/invisible.ts) is an `invisible_character`, and every identifier that can pass for
 * another name (scripts mixed, or Cyrillic/Greek letters that look Latin) a `confusable_identifier`,
 * at the line and column the console's code view shows them on. Pure functions of the parsed
 * script; each list is capped, with a last finding saying how many more there are.
 */
import ts from "typescript";
import { finding, type Finding } from "@/lib/contracts/analysis";
import { describeCodePoint, findHidden } from "@/lib/untrusted/invisible";

const MAX_HIDDEN_FINDINGS = 20;
const MAX_CONFUSABLE_FINDINGS = 20;
const BIDI_CONTROLS = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

function hiddenMessage(codePoint: number): string {
  const what = describeCodePoint(codePoint);
  if (codePoint === 0x2028 || codePoint === 0x2029 || codePoint === 0x0d) {
    return `${what}: JavaScript ends the line here (and a // comment with it), though most viewers show no line break`;
  }
  if (codePoint === 0x1b) return `${what}: a terminal escape can hide or rewrite the text around it`;
  if (BIDI_CONTROLS.has(codePoint)) return `${what}: a direction control can make code display in another order than it runs`;
  return `${what}: an invisible character`;
}

/**
 * One `invisible_character` finding per hidden character (lib/untrusted/invisible.ts: the characters
 * the console marks), at its line and column in TypeScript's line map — which, like JavaScript and
 * the console's code view, ends lines at \n, \r\n, \r, U+2028 and U+2029. Columns count UTF-16
 * units, as for every other finding.
 */
export function hiddenCharacterFindings(sf: ts.SourceFile): Finding[] {
  const hidden = findHidden(sf.text);
  const at = (index: number) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(index);
    return [line + 1, character + 1] as const;
  };
  const out = hidden.slice(0, MAX_HIDDEN_FINDINGS).map(({ codePoint, index }) => finding("invisible_character", hiddenMessage(codePoint), ...at(index)));
  if (hidden.length > MAX_HIDDEN_FINDINGS) {
    const next = hidden[MAX_HIDDEN_FINDINGS]!;
    out.push(finding("invisible_character", `${hidden.length - MAX_HIDDEN_FINDINGS} more invisible characters not listed`, ...at(next.index)));
  }
  return out;
}

/** Scripts told apart in identifiers; letters of any other script count as one "other" script. */
const SCRIPTS = [
  "Latin",
  "Greek",
  "Cyrillic",
  "Armenian",
  "Hebrew",
  "Arabic",
  "Syriac",
  "Thaana",
  "Nko",
  "Devanagari",
  "Bengali",
  "Gurmukhi",
  "Gujarati",
  "Oriya",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Sinhala",
  "Thai",
  "Lao",
  "Tibetan",
  "Myanmar",
  "Georgian",
  "Hangul",
  "Ethiopic",
  "Cherokee",
  "Canadian_Aboriginal",
  "Ogham",
  "Runic",
  "Khmer",
  "Mongolian",
  "Han",
  "Hiragana",
  "Katakana",
  "Bopomofo",
  "Coptic",
  "Tifinagh",
  "Vai",
  "Lisu",
  "Osage",
  "Adlam",
].map((name) => ({ name: name.replace("_", " "), pattern: new RegExp(`^\\p{Script=${name}}$`, "u") }));
const SCRIPT_NEUTRAL = /^[\p{Script=Common}\p{Script=Inherited}]$/u;
/** Script mixes that are ordinary writing (Unicode TR39 "highly restrictive"): Latin with CJK sets. */
const ORDINARY_MIXES = [new Set(["Latin", "Han", "Hiragana", "Katakana"]), new Set(["Latin", "Han", "Bopomofo"]), new Set(["Latin", "Han", "Hangul"])];

/** Cyrillic and Greek letters that look like Latin ones: code point → [Latin look-alike, name]. */
const LATIN_LOOKALIKES = new Map<number, [string, string]>([
  [0x0430, ["a", "CYRILLIC SMALL LETTER A"]],
  [0x0435, ["e", "CYRILLIC SMALL LETTER IE"]],
  [0x043e, ["o", "CYRILLIC SMALL LETTER O"]],
  [0x0440, ["p", "CYRILLIC SMALL LETTER ER"]],
  [0x0441, ["c", "CYRILLIC SMALL LETTER ES"]],
  [0x0443, ["y", "CYRILLIC SMALL LETTER U"]],
  [0x0445, ["x", "CYRILLIC SMALL LETTER HA"]],
  [0x0455, ["s", "CYRILLIC SMALL LETTER DZE"]],
  [0x0456, ["i", "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"]],
  [0x0458, ["j", "CYRILLIC SMALL LETTER JE"]],
  [0x04bb, ["h", "CYRILLIC SMALL LETTER SHHA"]],
  [0x0501, ["d", "CYRILLIC SMALL LETTER KOMI DE"]],
  [0x051b, ["q", "CYRILLIC SMALL LETTER QA"]],
  [0x051d, ["w", "CYRILLIC SMALL LETTER WE"]],
  [0x04cf, ["l", "CYRILLIC SMALL LETTER PALOCHKA"]],
  [0x0405, ["S", "CYRILLIC CAPITAL LETTER DZE"]],
  [0x0406, ["I", "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I"]],
  [0x0408, ["J", "CYRILLIC CAPITAL LETTER JE"]],
  [0x0410, ["A", "CYRILLIC CAPITAL LETTER A"]],
  [0x0412, ["B", "CYRILLIC CAPITAL LETTER VE"]],
  [0x0415, ["E", "CYRILLIC CAPITAL LETTER IE"]],
  [0x041a, ["K", "CYRILLIC CAPITAL LETTER KA"]],
  [0x041c, ["M", "CYRILLIC CAPITAL LETTER EM"]],
  [0x041d, ["H", "CYRILLIC CAPITAL LETTER EN"]],
  [0x041e, ["O", "CYRILLIC CAPITAL LETTER O"]],
  [0x0420, ["P", "CYRILLIC CAPITAL LETTER ER"]],
  [0x0421, ["C", "CYRILLIC CAPITAL LETTER ES"]],
  [0x0422, ["T", "CYRILLIC CAPITAL LETTER TE"]],
  [0x0425, ["X", "CYRILLIC CAPITAL LETTER HA"]],
  [0x04ae, ["Y", "CYRILLIC CAPITAL LETTER STRAIGHT U"]],
  [0x04c0, ["I", "CYRILLIC LETTER PALOCHKA"]],
  [0x03bf, ["o", "GREEK SMALL LETTER OMICRON"]],
  [0x0391, ["A", "GREEK CAPITAL LETTER ALPHA"]],
  [0x0392, ["B", "GREEK CAPITAL LETTER BETA"]],
  [0x0395, ["E", "GREEK CAPITAL LETTER EPSILON"]],
  [0x0396, ["Z", "GREEK CAPITAL LETTER ZETA"]],
  [0x0397, ["H", "GREEK CAPITAL LETTER ETA"]],
  [0x0399, ["I", "GREEK CAPITAL LETTER IOTA"]],
  [0x039a, ["K", "GREEK CAPITAL LETTER KAPPA"]],
  [0x039c, ["M", "GREEK CAPITAL LETTER MU"]],
  [0x039d, ["N", "GREEK CAPITAL LETTER NU"]],
  [0x039f, ["O", "GREEK CAPITAL LETTER OMICRON"]],
  [0x03a1, ["P", "GREEK CAPITAL LETTER RHO"]],
  [0x03a4, ["T", "GREEK CAPITAL LETTER TAU"]],
  [0x03a5, ["Y", "GREEK CAPITAL LETTER UPSILON"]],
  [0x03a7, ["X", "GREEK CAPITAL LETTER CHI"]],
]);

function scriptOf(char: string): string | undefined {
  if (SCRIPT_NEUTRAL.test(char)) return undefined;
  return SCRIPTS.find((script) => script.pattern.test(char))?.name ?? "another script";
}

function describeLetter(char: string, script: string): string {
  const codePoint = char.codePointAt(0)!;
  const lookalike = LATIN_LOOKALIKES.get(codePoint);
  const label = `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
  return lookalike ? `${label} ${lookalike[1]} (looks like Latin "${lookalike[0]}")` : `${label} (${script})`;
}

/**
 * Why an identifier can pass for another name, or undefined. Two honest rules: its letters come
 * from more than one script (digits, "_", "$" and combining marks belong to none), other than
 * Latin with Chinese/Japanese/Korean; or every letter is a Cyrillic/Greek look-alike of a Latin
 * one (it reads as a Latin name, e.g. Cyrillic "рау" for "pay").
 */
function confusableReason(name: string): string | undefined {
  const letters = [...name].flatMap((char) => {
    const script = scriptOf(char);
    return script === undefined ? [] : [{ char, script }];
  });
  if (letters.length === 0) return undefined;
  const scripts = [...new Set(letters.map((l) => l.script))];
  if (scripts.length > 1 && !ORDINARY_MIXES.some((mix) => scripts.every((s) => mix.has(s)))) {
    const main = scripts.includes("Latin") ? "Latin" : scripts[0]!;
    const odd = [...new Set(letters.filter((l) => l.script !== main).map((l) => l.char))].slice(0, 3);
    const others = scripts.filter((s) => s !== main);
    return `mixes ${main} and ${others.join(", ")} letters: ${odd.map((char) => describeLetter(char, letters.find((l) => l.char === char)!.script)).join(", ")}`;
  }
  if (scripts[0] !== "Latin" && letters.every((l) => LATIN_LOOKALIKES.has(l.char.codePointAt(0)!))) {
    const looksLike = [...name].map((char) => LATIN_LOOKALIKES.get(char.codePointAt(0)!)?.[0] ?? char).join("");
    return `is written in ${scripts[0]} letters that look like the Latin name "${looksLike}": ${describeLetter(letters[0]!.char, scripts[0]!)}`;
  }
  return undefined;
}

/** One `confusable_identifier` finding per distinct look-alike name, at its first occurrence. */
export function confusableIdentifierFindings(sf: ts.SourceFile): Finding[] {
  const out: Finding[] = [];
  const seen = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (out.length >= MAX_CONFUSABLE_FINDINGS) return;
    if ((ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && !seen.has(node.text)) {
      seen.add(node.text);
      const reason = confusableReason(node.text);
      if (reason !== undefined) {
        const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        out.push(finding("confusable_identifier", `identifier "${node.text}" ${reason}`, line + 1, character + 1));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}
