/**
 * Finding and redacting credentials in text and JSON that came from a script or a tool, before the
 * result reaches a model.
 *
 * Guarantees: `findSecrets` returns non-overlapping spans in order; when two detectors overlap, the
 * span is their union (a secret is never half-redacted) and the kind is the more specific one.
 * Every pattern runs in time linear in the input: each regex starts only where the previous
 * character cannot belong to its token (a lookbehind that covers the token's own characters), so
 * no token run is rescanned from inside, and every repetition that could backtrack is bounded.
 * `redactSecretsInJson` returns a new value (null-prototype objects, like `sanitizeJson`), never
 * mutates its input, redacts strings in values and in object keys, and reports a path per
 * redaction that is built from the redacted keys, so a path never repeats a secret.
 *
 * A Stripe key or a `gh?_` GitHub token glued to the text before it (`ref_052sk_live_4eC3…`) is
 * found when its tail holds a digit, as a generated key's does; an AWS key id glued to anything but
 * another base32 character (`xAKIA…`) is found; an AWS key id with more base32 letters right after
 * it is not, since where it would end cannot be told.
 *
 * Refuses: it is a detector of known credential shapes, not a proof that none are left. It does not
 * find secrets that were encoded, split across strings, reversed or otherwise disguised (a script
 * that wants to leak can always do so); short or low-entropy passwords (`password=hunter2`);
 * publishable keys (`pk_live_…`), which are not secret; or secrets in kinds it does not name.
 * Ordinary ids (`inv_0001`), UUIDs, hex digests, short base64 and words are left alone on purpose.
 */
import type { JsonValue } from "./safe-json";

/**
 * The closed set of what is detected:
 * - `private_key`: a PEM block `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, ENCRYPTED,
 *   PGP … BLOCK), up to its END line, or to the end of its base64 body when the block is truncated;
 * - `aws_access_key`: an AWS access key id (`AKIA`, `ASIA`, `ABIA`, `ACCA`, `A3T…` + 16);
 * - `github_token`: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36 or more, `github_pat_…`;
 * - `slack_token`: `xox[abposr]-…`, `xapp-…`, and Slack webhook URLs (`hooks.slack.com/services/…`);
 * - `stripe_key`: secret and restricted keys `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`, and
 *   webhook secrets `whsec_…`;
 * - `anthropic_key`: `sk-ant-…`;
 * - `openai_key`: `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` with a long mixed-case value;
 * - `google_api_key`: `AIza` + 35;
 * - `airlock_token`: our agent tokens, `alk_` + 43 base64url characters (lib/auth/tokens.ts);
 * - `jwt`: three base64url segments, the first two JSON objects (`eyJ…`), signature may be empty;
 * - `connection_string`: any `scheme://user:password@host…` URL with a password (postgres, mysql,
 *   mongodb+srv, redis, amqp, https…), redacted whole;
 * - `bearer_token`: the credential after `Bearer `, or after `Authorization:` (Basic, Token, …);
 * - `generic_api_key`: the value of a `key=`, `secret=`, `token=`, `api_key:`, `password=`, …
 *   assignment (also as JSON `"name": "value"`, and a JSON object key with a string value) when the
 *   value is long and high-entropy; for password names, at least 8 characters of two classes.
 */
export type SecretKind =
  | "private_key"
  | "aws_access_key"
  | "github_token"
  | "slack_token"
  | "stripe_key"
  | "anthropic_key"
  | "openai_key"
  | "google_api_key"
  | "airlock_token"
  | "jwt"
  | "connection_string"
  | "bearer_token"
  | "generic_api_key";

export const SECRET_KINDS: readonly SecretKind[] = [
  "private_key",
  "aws_access_key",
  "github_token",
  "slack_token",
  "stripe_key",
  "anthropic_key",
  "openai_key",
  "google_api_key",
  "airlock_token",
  "jwt",
  "connection_string",
  "bearer_token",
  "generic_api_key",
];

export type SecretSpan = { kind: SecretKind; start: number; end: number };
export type SecretRedaction = { kind: SecretKind; path: string };

/** Higher wins when detectors overlap: the specific shape names the secret better than its context. */
const PRIORITY: Record<SecretKind, number> = {
  private_key: 100,
  airlock_token: 95,
  anthropic_key: 92,
  aws_access_key: 90,
  github_token: 90,
  slack_token: 90,
  stripe_key: 90,
  google_api_key: 90,
  openai_key: 85,
  jwt: 80,
  connection_string: 70,
  bearer_token: 60,
  generic_api_key: 50,
};

// ---------------------------------------------------------------------------------------------
// Value tests

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PLACEHOLDER =
  /^(?:\*+|x{3,}|X{3,}|\.{3,}|•+|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%s|<[^>]*>|\{\{[^}]*\}\}|\[REDACTED[^\]]*\]|\[[^\]]*\]|null|undefined|none|true|false|redacted)$/i;

function shannonEntropy(value: string): number {
  const counts = new Map<string, number>();
  for (const ch of value) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  const n = value.length;
  for (const c of counts.values()) {
    const p = c / n;
    bits -= p * Math.log2(p);
  }
  return bits;
}

function classes(value: string): { lower: boolean; upper: boolean; digit: boolean; other: boolean } {
  return { lower: /[a-z]/.test(value), upper: /[A-Z]/.test(value), digit: /[0-9]/.test(value), other: /[^A-Za-z0-9]/.test(value) };
}

/** Long, mixed and high-entropy: what a generated key looks like and a word, id, date or UUID does not. */
function looksGenerated(value: string, minLength = 16): boolean {
  if (value.length < minLength || value.length > 4096) return false;
  if (UUID.test(value) || PLACEHOLDER.test(value) || /^\d+$/.test(value)) return false;
  const c = classes(value);
  const letters = c.lower || c.upper;
  if (!letters) return false;
  // A digit and a letter, or both cases (base62/base64 keys without a digit in a short window).
  if (!c.digit && !(c.lower && c.upper && value.length >= 20)) return false;
  return shannonEntropy(value) >= 3.2;
}

/** Passwords are chosen by people: shorter is allowed, but two character classes and no placeholder. */
function looksLikePassword(value: string): boolean {
  if (value.length < 8 || value.length > 512 || PLACEHOLDER.test(value)) return false;
  const c = classes(value);
  const kinds = Number(c.lower) + Number(c.upper) + Number(c.digit) + Number(c.other);
  return kinds >= 2 && (c.digit || c.other) && !/^\d+$/.test(value);
}

/** Mixed case and a digit: an OpenAI-style base62 key, not an `sk-learn-tutorial` slug. */
function mixedCaseWithDigit(value: string): boolean {
  const c = classes(value);
  return c.lower && c.upper && c.digit && shannonEntropy(value) >= 3.5;
}

// ---------------------------------------------------------------------------------------------
// Sensitive names (for assignments in text and for JSON object keys)

/** `key` is the bare name `key`, which also names cache keys, object keys and digests. */
type NameClass = "password" | "secret" | "key" | "authorization";

const PASSWORD_SUFFIXES = ["password", "passwd", "passphrase", "pwd"];
const SECRET_SUFFIXES = ["secret", "token", "credential", "credentials"];
const KEY_SUFFIXES = [
  "apikey",
  "accesskey",
  "secretkey",
  "privatekey",
  "signingkey",
  "encryptionkey",
  "masterkey",
  "clientkey",
  "appkey",
  "authkey",
  "sessionkey",
];
/** Opaque cursors and public halves are named like secrets but are not. */
const NOT_SECRET_SUFFIXES = ["pagetoken", "nexttoken", "continuationtoken", "synctoken", "cursortoken", "publickey", "publishablekey"];

const nameCache = new Map<string, NameClass | null>();

/** Keys repeat across rows: remember the answer for the last few thousand names. */
function classifyName(name: string): NameClass | null {
  const cached = nameCache.get(name);
  if (cached !== undefined) return cached;
  const result = name.length > 256 ? null : classifyNameUncached(name);
  if (nameCache.size >= 4096) nameCache.clear();
  nameCache.set(name, result);
  return result;
}

function classifyNameUncached(name: string): NameClass | null {
  // Plurals name lists of the same thing: `apiKeys`, `tokens`, `passwords`.
  const n = name
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "")
    .replace(/(?<=key|token|secret|password)s$/, "");
  if (n.length === 0 || n.length > 64) return null;
  if (NOT_SECRET_SUFFIXES.some((s) => n.endsWith(s))) return null;
  if (n === "authorization" || n === "proxyauthorization") return "authorization";
  if (n === "pass" || PASSWORD_SUFFIXES.some((s) => n.endsWith(s))) return "password";
  if (n === "key") return "key";
  if (n === "auth" || n === "oauth") return "secret";
  if (KEY_SUFFIXES.some((s) => n.endsWith(s)) || SECRET_SUFFIXES.some((s) => n.endsWith(s))) return "secret";
  return null;
}

function valueIsSecretFor(nameClass: NameClass, value: string): boolean {
  switch (nameClass) {
    case "password":
      return looksLikePassword(value) || looksGenerated(value);
    case "key":
      // A bare `key` is also a cache key, an object key or a content digest.
      if (/^[0-9a-f]+$/.test(value) && [32, 40, 64, 128].includes(value.length)) return false;
      if (/[/.]/.test(value) && !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) return false;
      return looksGenerated(value);
    case "authorization":
      // Every Authorization header value is a credential.
      return value.length >= 8 && !PLACEHOLDER.test(value);
    case "secret":
      return looksGenerated(value);
  }
}

// ---------------------------------------------------------------------------------------------
// Detectors

type Detector = (text: string, out: SecretSpan[]) => void;

/** A regex detector; `group` selects the redacted part, `valid` filters the candidates. */
function regexDetector(kind: SecretKind, re: RegExp, options: { group?: number; valid?: (value: string, match: RegExpExecArray) => boolean } = {}): Detector {
  if (!re.global) throw new Error("detector regexes must be global");
  return (text, out) => {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      if (m[0].length === 0) {
        re.lastIndex++;
        continue;
      }
      const group = options.group ?? 0;
      const value = m[group];
      if (value === undefined || value.length === 0) continue;
      const start = group === 0 ? m.index : m.index + m[0].lastIndexOf(value);
      if (options.valid && !options.valid(value, m)) continue;
      out.push({ kind, start, end: start + value.length });
    }
  };
}

// Key ids are base32 after the prefix: `ASIAPACIFICREGION…` in capitals is a word, not a key.
// Only another base32 character before the prefix hides it: `ref9AKIA…` and `xAKIA…` are keys glued to text.
const AWS = regexDetector("aws_access_key", /(?<![A-Z2-7])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9])/g);

/**
 * `gh?_` and Stripe's prefixes hold a `_` their tails cannot, so they are found glued to the text
 * before them (`ref_052sk_live_…`) and never rescanned. Glued to a letter or digit, the tail must
 * hold a digit, as a generated key's does: `task_test_checkoutFlowRegression` is an identifier.
 */
const tailOfGluedKeyHasDigit = (value: string, match: RegExpExecArray): boolean =>
  match.index === 0 || !/[A-Za-z0-9]/.test(match.input[match.index - 1]!) || /[0-9]/.test(value.slice(value.indexOf("_", 3) + 1));

const GITHUB = regexDetector("github_token", /gh[pousr]_[A-Za-z0-9]{36,255}|(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,255}/g, {
  valid: tailOfGluedKeyHasDigit,
});

const SLACK = regexDetector(
  "slack_token",
  /(?<![A-Za-z0-9-])(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,255}|https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,300}/g,
  { valid: (v) => /[0-9]/.test(v) },
);

const STRIPE = regexDetector("stripe_key", /(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,255}|whsec_[A-Za-z0-9]{24,255})/g, {
  valid: tailOfGluedKeyHasDigit,
});

const ANTHROPIC = regexDetector("anthropic_key", /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,300}/g);

const OPENAI = regexDetector("openai_key", /(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?([A-Za-z0-9_-]{32,300})/g, {
  valid: (_v, m) => mixedCaseWithDigit(m[1] ?? ""),
});

const GOOGLE = regexDetector("google_api_key", /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}/g);

const AIRLOCK = regexDetector("airlock_token", /(?<![A-Za-z0-9_-])alk_[A-Za-z0-9_-]{43,300}/g);

const JWT = regexDetector("jwt", /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,4000}\.[A-Za-z0-9_-]{8,16000}\.[A-Za-z0-9_-]{0,4000}/g, {
  valid: (v) => {
    const payload = v.split(".")[1] ?? "";
    return payload.startsWith("ey"); // a JSON object once decoded
  },
});

// Any scheme, a user (possibly empty), a password, then the host and the rest of the URL.
const CONNECTION = regexDetector(
  "connection_string",
  /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}:\/\/([^\s:/@'"<>\\]{0,256}):([^\s@/'"<>\\]{1,512})@[^\s'"<>\\]{1,2048}/g,
  {
    valid: (_v, m) => {
      const password = m[2] ?? "";
      return !PLACEHOLDER.test(password) && !PLACEHOLDER.test(decodeURIComponentSafe(password));
    },
  },
);

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const BEARER = regexDetector("bearer_token", /(?<![A-Za-z0-9])bearer\s{1,8}([A-Za-z0-9._~+/-]{16,8192}=*)/gi, {
  group: 1,
  valid: (v) => {
    const c = classes(v);
    return (c.digit && (c.lower || c.upper)) || (c.lower && c.upper && v.length >= 20);
  },
});

const AUTHORIZATION = regexDetector(
  "bearer_token",
  /(?<![A-Za-z0-9_-])(?:proxy-)?authorization\\?["']?\s{0,8}[:=]\s{0,8}\\?["']?(?:(basic|token|digest|apikey|key|sso-key)\s{1,8})?([A-Za-z0-9._~+/:=-]{8,8192})/gi,
  {
    group: 2,
    valid: (v, m) => {
      const scheme = (m[1] ?? "").toLowerCase();
      if (scheme === "basic") return basicCredential(v);
      if (scheme === "") return !/^bearer$/i.test(v) && looksGenerated(v);
      return looksGenerated(v, 12);
    },
  },
);

function basicCredential(value: string): boolean {
  if (!/^[A-Za-z0-9+/]{6,}={0,2}$/.test(value)) return false;
  let decoded: string;
  try {
    decoded = atob(value);
  } catch {
    return false;
  }
  return /^[\x20-\x7e]+:[\x20-\x7e]+$/.test(decoded);
}

// `name = value`, `name: value`, `"name": "value"`, `name=value&` (query strings), `\"name\":\"value\"`.
// A quoted value runs to its closing quote (so `&` or `;` inside a password is kept), without spaces.
const ASSIGNMENT =
  /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{0,48}?(?:pass(?:word|wd|phrase)?|pwd|secrets?|tokens?|credentials?|auth|keys?))\\?["']?\s{0,4}(?::=|=>|[:=])\s{0,4}(?:\\?"([^"\\\s]{1,1024})|'([^'\\\s]{1,1024})|([^\s"'\\&,;<>]{1,1024}))/gi;

const GENERIC: Detector = (text, out) => {
  ASSIGNMENT.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = ASSIGNMENT.exec(text)) !== null) {
    const name = m[1] ?? "";
    const quoted = m[2] ?? m[3];
    const value = quoted ?? m[4] ?? "";
    const nameClass = classifyName(name);
    if (!nameClass || nameClass === "authorization") continue;
    // Trailing punctuation of prose is not part of an unquoted value.
    const trimmed = quoted === undefined ? value.replace(/[.)\]}]+$/, "") : value;
    if (!valueIsSecretFor(nameClass, trimmed)) continue;
    const start = m.index + m[0].length - value.length;
    out.push({ kind: "generic_api_key", start, end: start + trimmed.length });
  }
};

// PEM: the header, optional RFC 1421 headers, the base64 body, then the END line if present.
const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]+ ){0,4})PRIVATE KEY( BLOCK)?-----/g;
const PEM_HEADERS = /(?:(?:\r?\n|\\r?\\n)(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n\\]{0,200}){0,16}/y;
// Base64, whitespace, and `\n` escapes of a key embedded in JSON text. A truncated block (no END)
// takes the run that follows it, which may over-redact a few words: the safe direction.
const PEM_BODY = /[A-Za-z0-9+/=\s\\]*/y;
const PEM_END = /-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----/y;

const PRIVATE_KEY: Detector = (text, out) => {
  PEM_BEGIN.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = PEM_BEGIN.exec(text)) !== null) {
    let end = m.index + m[0].length;
    PEM_HEADERS.lastIndex = end;
    if (PEM_HEADERS.exec(text)) end = PEM_HEADERS.lastIndex;
    PEM_BODY.lastIndex = end;
    if (PEM_BODY.exec(text)) end = PEM_BODY.lastIndex;
    PEM_END.lastIndex = end;
    if (PEM_END.exec(text)) end = PEM_END.lastIndex;
    else end = trimEndWhitespace(text, m.index + m[0].length, end);
    out.push({ kind: "private_key", start: m.index, end });
    PEM_BEGIN.lastIndex = end;
  }
};

function trimEndWhitespace(text: string, min: number, end: number): number {
  while (end > min && /\s/.test(text[end - 1]!)) end--;
  return end;
}

/** Two cheap passes first: text that fails both has nothing any detector could match. */
const TRIGGER = /A(?:KIA|SIA|BIA|CCA|3T)|gh[pousr]_|github_pat_|xox|xapp-|hooks\.slack|k_live_|k_test_|whsec_|sk-|AIza|alk_|eyJ|PRIVATE KEY|:\/\//;
const NAME_TRIGGER = /pass|pwd|secret|token|credential|auth|key|bearer/i;
const NAME_HINT = /pass|pwd|secret|token|credential|auth|key/i;
const AWS_HINT = /A(?:KIA|SIA|BIA|CCA|3T)/;
const GITHUB_HINT = /gh[pousr]_|github_pat_/;
const STRIPE_HINT = /[sr]k_(?:live|test)_|whsec_/;

/** Each detector runs only when a cheap test (a substring, mostly) says it could match. */
const DETECTORS: [hint: (text: string) => boolean, detect: Detector][] = [
  [(t) => t.includes("PRIVATE KEY"), PRIVATE_KEY],
  [(t) => t.includes("alk_"), AIRLOCK],
  [(t) => t.includes("sk-ant-"), ANTHROPIC],
  [(t) => AWS_HINT.test(t), AWS],
  [(t) => GITHUB_HINT.test(t), GITHUB],
  [(t) => t.includes("xox") || t.includes("xapp-") || t.includes("hooks.slack.com"), SLACK],
  [(t) => STRIPE_HINT.test(t), STRIPE],
  [(t) => t.includes("AIza"), GOOGLE],
  [(t) => t.includes("sk-"), OPENAI],
  [(t) => t.includes("eyJ"), JWT],
  [(t) => t.includes("://"), CONNECTION],
  [(t) => /bearer/i.test(t), BEARER],
  [(t) => /authorization/i.test(t), AUTHORIZATION],
  [(t) => (t.includes("=") || t.includes(":")) && NAME_HINT.test(t), GENERIC],
];

// ---------------------------------------------------------------------------------------------
// Public API

/** Non-overlapping secret spans in `text`, in order; overlapping detections are merged. */
export function findSecrets(text: string): SecretSpan[] {
  if (text.length < 8 || !(TRIGGER.test(text) || NAME_TRIGGER.test(text))) return [];
  const found: SecretSpan[] = [];
  for (const [hint, detect] of DETECTORS) if (hint(text)) detect(text, found);
  if (found.length === 0) return [];
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: SecretSpan[] = [];
  for (const span of found) {
    const last = merged[merged.length - 1];
    if (last && span.start < last.end) {
      if (span.end > last.end) last.end = span.end;
      if (PRIORITY[span.kind] > PRIORITY[last.kind]) last.kind = span.kind;
    } else {
      merged.push({ ...span });
    }
  }
  return merged;
}

const NON_ASCII = /[^\x00-\x7f]/;
const JOINERS = /[\u200c\u200d]/g;

/**
 * `text` as a model and a person read it, when that differs from how it is written: NFKC-folded
 * (full-width `ｓｋ＿ｌｉｖｅ＿…` reads as the key) and zero-width joiners dropped (invisible, so a key
 * split by one reads whole); null for ASCII text, which reads as written. Offsets stay line-true:
 * neither step adds or removes a line break.
 */
export function asRead(text: string): string | null {
  if (!NON_ASCII.test(text)) return null;
  const read = text.normalize("NFKC").replace(JOINERS, "");
  return read === text ? null : read;
}

/**
 * Replaces each secret with `[REDACTED:<kind>]`; `kinds` has one entry per replacement, in order.
 * A text that spells a credential in compatibility forms (full-width `ｓｋ＿ｌｉｖｅ＿…`, which a
 * model reads as the key) or splits one with zero-width joiners comes back NFKC-folded, joiners
 * removed: redacted as written, then folded and redacted again, so folding never undoes a
 * redaction; its `kinds` are those found as written, then those the folding revealed.
 */
export function redactSecrets(text: string): { text: string; kinds: SecretKind[] } {
  const written = replaced(text, findSecrets(text));
  const folded = asRead(written.text);
  if (folded === null) return written;
  const again = replaced(folded, findSecrets(folded));
  return again.kinds.length === 0 ? written : { text: again.text, kinds: [...written.kinds, ...again.kinds] };
}

/**
 * `redactSecrets` for a message that may name places as JSON Pointers: a schema check writes `/` in
 * a key as `~1`, so a connection string used as a key (`postgres:~1~1app:…`) no longer looks like
 * one. Such a message is also read with its pointers unescaped, and returned so when that finds a
 * secret.
 */
export function redactSecretsInMessage(text: string): { text: string; kinds: SecretKind[] } {
  const unescaped = text.replace(/~1/g, "/").replace(/~0/g, "~");
  if (unescaped !== text) {
    const read = redactSecrets(unescaped);
    if (read.kinds.length > 0) return read;
  }
  return redactSecrets(text);
}

function replaced(text: string, spans: readonly SecretSpan[]): { text: string; kinds: SecretKind[] } {
  if (spans.length === 0) return { text, kinds: [] };
  let out = "";
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.start) + `[REDACTED:${span.kind}]`;
    at = span.end;
  }
  return { text: out + text.slice(at), kinds: spans.map((s) => s.kind) };
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `customers[3].note`; a key that is not an identifier is quoted: `rows[0]["e-mail"]`. */
function formatPath(segments: readonly (string | number)[]): string {
  let path = "";
  for (const s of segments) {
    if (typeof s === "number") path += `[${s}]`;
    else if (IDENTIFIER.test(s)) path += path ? `.${s}` : s;
    else path += `[${JSON.stringify(s)}]`;
  }
  return path;
}

/**
 * Redacts every string of a JSON value, keys included, and the string value of a key named like a
 * credential (`password`, `apiKey`, `client_secret`, `authorization`, …) when that value looks
 * like one. Returns a new value; `path` is like `customers[3].note`, built from redacted keys. Two
 * keys that redact to the same text are kept apart with a `#2`, `#3`, … suffix. Expects values
 * from `toSafeJson` (bounded depth): it recurses.
 */
export function redactSecretsInJson(value: JsonValue): { value: JsonValue; redactions: SecretRedaction[] } {
  const redactions: SecretRedaction[] = [];
  const segments: (string | number)[] = [];
  const keys = new Map<string, { text: string; kinds: SecretKind[] }>();
  const redactKey = (key: string) => {
    let r = keys.get(key);
    if (!r) keys.set(key, (r = redactSecrets(key)));
    return r;
  };
  const walk = (v: JsonValue, nameClass: NameClass | null): JsonValue => {
    if (typeof v === "string") {
      const r = redactSecrets(v);
      if (r.kinds.length > 0) {
        const path = formatPath(segments);
        for (const kind of r.kinds) redactions.push({ kind, path });
        return r.text;
      }
      if (nameClass && valueIsSecretFor(nameClass, v.trim())) {
        const kind: SecretKind = nameClass === "authorization" ? "bearer_token" : "generic_api_key";
        redactions.push({ kind, path: formatPath(segments) });
        return `[REDACTED:${kind}]`;
      }
      return v;
    }
    if (Array.isArray(v)) {
      const out: JsonValue[] = new Array<JsonValue>(v.length);
      for (let i = 0; i < v.length; i++) {
        segments.push(i);
        out[i] = walk(v[i]!, nameClass);
        segments.pop();
      }
      return out;
    }
    if (v !== null && typeof v === "object") {
      const out = Object.create(null) as { [key: string]: JsonValue };
      for (const key of Object.keys(v)) {
        const r = redactKey(key);
        let name = r.text;
        if (r.kinds.length > 0 && Object.prototype.hasOwnProperty.call(out, name)) {
          let n = 2;
          while (Object.prototype.hasOwnProperty.call(out, `${r.text}#${n}`)) n++;
          name = `${r.text}#${n}`;
        }
        segments.push(name);
        if (r.kinds.length > 0) {
          const path = formatPath(segments);
          for (const kind of r.kinds) redactions.push({ kind, path });
        }
        Object.defineProperty(out, name, { value: walk(v[key]!, classifyName(key)), enumerable: true, writable: true, configurable: true });
        segments.pop();
      }
      return out;
    }
    return v;
  };
  return { value: walk(value, null), redactions };
}
