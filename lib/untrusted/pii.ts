/**
 * Finding personal data (emails, phone numbers, IBANs, payment card numbers) in text that came
 * from a script or a tool, so the gate can tokenize it before a model sees it.
 *
 * Guarantees: `findPii` is synchronous and returns non-overlapping matches in order, each with the
 * exact `value` it covers (`text.slice(start, end)`); an IBAN is reported only if its country
 * length and mod-97 checksum are right, a card only if it has a card's length and issuer prefix and
 * passes Luhn. Every pattern runs in time linear in the input (each regex starts only where the
 * previous character cannot belong to its token, and every repetition that could backtrack is
 * bounded); the phone library only ever sees short ASCII candidates.
 *
 * Phone numbers: our linear scanner proposes digit groups (8 to 15 digits); `+`-prefixed
 * (E.164-shaped) and North American numbers are accepted by our rules, every other candidate
 * (national formats such as `030 901820`, `07700 900123`, `06 12 34 56 78`) is decided by Arcjet's
 * detection engine (`@arcjet/redact-wasm`, Rust compiled to WebAssembly), which needs
 * `await loadPiiDetector()` once at start-up; `findPii` throws until then.
 *
 * Refuses: names are never detected (they are marked by configuration, not guessed); no addresses,
 * national ids, IP addresses or dates of birth. Detection is of shapes: a 10-digit number that is a
 * plausible phone number is reported as one, and a phone number written in words or split across
 * strings is not found.
 */
import type { RedactSensitiveInfoConfig, RedactedSensitiveInfoEntity } from "@arcjet/redact-wasm";

export type PiiKind = "EMAIL" | "PHONE" | "IBAN" | "CARD";

export type PiiMatch = { kind: PiiKind; start: number; end: number; value: string };

type Engine = { redact(content: string, options: RedactSensitiveInfoConfig): RedactedSensitiveInfoEntity[] };

let engine: Engine | null = null;
let loading: Promise<void> | null = null;

/** Loads the phone-number engine (WebAssembly) once; later calls return the same promise. */
export function loadPiiDetector(): Promise<void> {
  loading ??= (async () => {
    const { initializeWasm } = await import("@arcjet/redact-wasm");
    const instance = await initializeWasm(
      () => [],
      () => undefined,
    );
    if (!instance) throw new Error("the PII detector could not start: WebAssembly is not available in this runtime");
    engine = instance;
  })().catch((error: unknown) => {
    loading = null;
    throw error;
  });
  return loading;
}

export function isPiiDetectorLoaded(): boolean {
  return engine !== null;
}

const PHONE_ONLY: RedactSensitiveInfoConfig = { entities: [{ tag: "phone-number" }], contextWindowSize: 1, skipCustomDetect: true, skipCustomRedact: true };

// ---------------------------------------------------------------------------------------------
// Checksums

/** Lengths from the SWIFT IBAN registry; a country not listed has no IBAN. */
// prettier-ignore
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23,
  GL: 18, GR: 27, GT: 28, HN: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28,
  LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28,
  NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24,
  SI: 19, SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

/** ISO 13616 mod-97 over the compact, upper-case IBAN. */
function ibanChecksumOk(iban: string): boolean {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + (code - 48)) % 97;
    else if (code >= 65 && code <= 90) remainder = (remainder * 100 + (code - 55)) % 97;
    else return false;
  }
  return remainder === 1;
}

function luhnOk(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Issuer prefix and length: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro. */
function cardBrandOk(d: string): boolean {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p3 = Number(d.slice(0, 3));
  const p4 = Number(d.slice(0, 4));
  if (d[0] === "4") return n === 13 || n === 16 || n === 19;
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16;
  if (p2 === 34 || p2 === 37) return n === 15;
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return n >= 16 && n <= 19;
  if (p4 >= 3528 && p4 <= 3589) return n >= 16 && n <= 19;
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) return n >= 14 && n <= 19;
  if (p2 === 62) return n >= 16 && n <= 19;
  if (p2 === 50 || (p2 >= 56 && p2 <= 69)) return n >= 12 && n <= 19;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Detectors. Each returns its own matches, non-overlapping and in order.

type Span = { kind: PiiKind; start: number; end: number };

// Local part: letters of any script, digits, and the symbols people put in addresses. Starts only
// where the previous character could not be part of a local part, so a run is scanned once.
const EMAIL = /(?<![\p{L}\p{N}\p{M}._%+'-])[\p{L}\p{N}\p{M}_%+'-]+(?:\.[\p{L}\p{N}\p{M}_%+'-]+)*@[\p{L}\p{N}\p{M}-]+(?:\.[\p{L}\p{N}\p{M}-]+)+/gu;
const TLD = /^(?:\p{L}{2,63}|xn--[a-z0-9-]{1,59})$/iu;

function labelsOk(labels: string[]): boolean {
  for (const l of labels) if (l.length === 0 || l.length > 63 || l.startsWith("-") || l.endsWith("-")) return false;
  return true;
}

function findEmails(text: string, out: Span[]): void {
  if (!text.includes("@")) return;
  EMAIL.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = EMAIL.exec(text)) !== null) {
    let start = m.index;
    let value = m[0];
    // A quote before the address belongs to the text around it, not to the local part.
    while (value.startsWith("'")) {
      value = value.slice(1);
      start++;
    }
    const at = value.indexOf("@");
    const local = value.slice(0, at);
    let domain = value.slice(at + 1);
    while (domain.endsWith("-")) domain = domain.slice(0, -1);
    const labels = domain.split(".");
    if (local.length === 0 || local.length > 64 || local.endsWith("'") || domain.length > 253) continue;
    if (!labelsOk(labels)) continue;
    if (!TLD.test(labels[labels.length - 1]!)) continue;
    if (/^\d+(?:\.\d+)?x$/i.test(labels[0]!)) continue; // icon@2x.png
    out.push({ kind: "EMAIL", start, end: start + at + 1 + domain.length });
  }
}

// Two letters, two digits, then 11 to 30 letters or digits, a single space or hyphen allowed between them.
const IBAN = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ \u00a0-]?[A-Za-z0-9]){11,30}(?![A-Za-z0-9])/g;
const IBAN_SEPARATORS = new Set([" ", "\u00a0", "-"]);
const IBAN_HINT = /[A-Za-z]{2}\d{2}/;

function findIbans(text: string, out: Span[]): void {
  IBAN.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = IBAN.exec(text)) !== null) {
    const raw = m[0];
    const country = raw.slice(0, 2).toUpperCase();
    const length = IBAN_LENGTHS[country];
    const nextStart = m.index + 4;
    if (length === undefined) {
      IBAN.lastIndex = nextStart;
      continue;
    }
    // Take exactly `length` characters; what follows must be the end or a separator.
    let compact = "";
    let i = 0;
    for (; i < raw.length && compact.length < length; i++) {
      const ch = raw[i]!;
      if (!IBAN_SEPARATORS.has(ch)) compact += ch;
    }
    const boundary = i === raw.length || IBAN_SEPARATORS.has(raw[i]!);
    const upper = compact.toUpperCase();
    if (compact.length === length && boundary && /^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(upper) && ibanChecksumOk(upper)) {
      out.push({ kind: "IBAN", start: m.index, end: m.index + i });
      IBAN.lastIndex = m.index + i;
    } else {
      IBAN.lastIndex = nextStart;
    }
  }
}

// Compact 12-19 digits, groups of four (the last 1-4, optionally a fifth of up to 3), or 4-6-4/5,
// the groups separated by spaces, hyphens or dots.
// Not next to a letter or digit, nor after `.`/`,` (the fraction of a decimal number) or `+` (a
// phone number in E.164 form can pass Luhn). The `(?=\d)`
// lets the engine skip non-digits before it evaluates the lookbehind.
const CARD =
  /(?=\d)(?<![A-Za-z0-9.,+])(?:\d{12,19}|\d{4}([ \u00a0.-])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?|\d{4}([ \u00a0.-])\d{6}\2\d{4,5})(?![A-Za-z0-9]|[.,]\d)/g;
const CARD_HINT = /\d{4}[ \u00a0.-]?\d{4}/;

function findCards(text: string, out: Span[]): void {
  CARD.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = CARD.exec(text)) !== null) {
    const digits = m[0].replace(/\D/g, "");
    if (digits.length >= 12 && cardBrandOk(digits) && luhnOk(digits)) out.push({ kind: "CARD", start: m.index, end: m.index + m[0].length });
  }
}

// A phone candidate: an optional `+` or `(`, then digits with single separators, ending on a digit.
// Not inside a word, an address or a hyphenated id (`00000000-0008-4080-a000-…` is a UUID), and
// not running into a time (`Dec 04 2026 21:23:02`: the hour is not a phone number's last group).
const PHONE_CANDIDATE = /(?<![A-Za-z0-9_@./+-])(?:\+|\(\+?)?\d[\d ().\-/\u00a0]{5,30}\d(?!-?[A-Za-z0-9_@]|:\d)/g;
const NANP = /^(?:\+?1[ .-]?)?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}$/;
const NOT_A_PHONE = [
  /^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)/, // ISO date (and what follows it)
  /^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$/, // day-month-year
  /^\d{1,3}(?:\.\d{1,3}){3}$/, // IPv4
  /^\d+[.,]\d{1,2}$/, // an amount
];

function notAPhone(candidate: string): boolean {
  for (const re of NOT_A_PHONE) if (re.test(candidate)) return true;
  return false;
}

function findPhones(text: string, taken: Span[], out: Span[]): void {
  PHONE_CANDIDATE.lastIndex = 0;
  let m: RegExpExecArray | null;
  let t = 0;
  while ((m = PHONE_CANDIDATE.exec(text)) !== null) {
    const start = m.index;
    const end = start + m[0].length;
    while (t < taken.length && taken[t]!.end <= start) t++;
    if (t < taken.length && taken[t]!.start < end) continue;
    const candidate = m[0];
    if (countDigits(candidate) <= 15) {
      considerPhone(candidate, start, out);
      continue;
    }
    // Several numbers in one run (`415-555-2671 / 415-555-2672`): judge the parts between wide
    // separators; a part that is still too long for one number goes to the engine.
    PHONE_PART.lastIndex = 0;
    let part: RegExpExecArray | null;
    while ((part = PHONE_PART.exec(candidate)) !== null) considerPhone(part[0], start + part.index, out);
  }
}

/** The parts of an over-long candidate: separated by a slash or by two or more spaces. */
const PHONE_PART = /(?:\+|\(\+?)?\d(?:[\d().\-\u00a0]| (?! ))*\d/g;

function countDigits(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 48 && c <= 57) n++;
  }
  return n;
}

function considerPhone(candidate: string, start: number, out: Span[]): void {
  const digits = countDigits(candidate);
  if (digits < 8) return;
  const bare = digits === candidate.length;
  if (digits <= 15) {
    if (notAPhone(candidate)) return;
    if (bare && digits !== 10 && digits !== 11) return;
    // E.164-shaped (`+` and 8-15 digits) and North American numbers are ours to accept.
    if (candidate.startsWith("+") || candidate.startsWith("(+") || NANP.test(candidate)) {
      out.push({ kind: "PHONE", start, end: start + candidate.length });
      return;
    }
  } else if (bare) {
    return;
  }
  // National formats, and runs of several numbers (`030 901820 030 901821`, which the engine may
  // report as one match: still all covered), go to the engine. The candidate is ASCII (NBSP mapped
  // to a space), so the engine's UTF-8 byte offsets are our string offsets.
  const ascii = candidate.replace(/\u00a0/g, " ");
  for (const hit of engine!.redact(ascii, PHONE_ONLY)) {
    if (hit.end > ascii.length || hit.start >= hit.end) continue;
    if (countDigits(ascii.slice(hit.start, hit.end)) < 8) continue;
    out.push({ kind: "PHONE", start: start + hit.start, end: start + hit.end });
  }
}

/** Adds `incoming` to `accepted` (both sorted, non-overlapping), dropping what overlaps. Linear. */
function mergeInto(accepted: Span[], incoming: Span[]): Span[] {
  if (incoming.length === 0) return accepted;
  const out: Span[] = [];
  let a = 0;
  for (const span of incoming) {
    while (a < accepted.length && accepted[a]!.end <= span.start) out.push(accepted[a++]!);
    if (a < accepted.length && accepted[a]!.start < span.end) continue;
    if (out.length > 0 && out[out.length - 1]!.end > span.start) continue;
    out.push(span);
  }
  while (a < accepted.length) out.push(accepted[a++]!);
  return out;
}

// ---------------------------------------------------------------------------------------------

/**
 * Emails, phone numbers, IBANs and card numbers in `text`, non-overlapping and in order. When two
 * overlap, IBAN wins over CARD over EMAIL over PHONE. Throws if `loadPiiDetector()` has not finished.
 */
export function findPii(text: string): PiiMatch[] {
  if (!engine) throw new Error("PII detector not loaded: call `await loadPiiDetector()` once at start-up before findPii");
  if (text.length < 6) return [];
  const hasAt = text.includes("@");
  if (!hasAt && !/\d/.test(text)) return [];
  // Cheap hints first: most strings of a result hold none of these shapes.
  let spans: Span[] = [];
  let found: Span[] = [];
  if (IBAN_HINT.test(text)) findIbans(text, (spans = []));
  if (CARD_HINT.test(text)) {
    findCards(text, (found = []));
    spans = mergeInto(spans, found);
  }
  if (hasAt) {
    findEmails(text, (found = []));
    spans = mergeInto(spans, found);
  }
  findPhones(text, spans, (found = []));
  spans = mergeInto(spans, found);
  const out: PiiMatch[] = [];
  for (const s of spans) out.push({ kind: s.kind, start: s.start, end: s.end, value: text.slice(s.start, s.end) });
  return out;
}
