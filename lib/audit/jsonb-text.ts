/**
 * The text PostgreSQL's jsonb writes (jsonb_out) for a value the app stored there with
 * JSON.stringify: how tool-call arguments and results read back from rows written before they were
 * kept as their canonical text (migration 20261202232335_tool_call_canonical_text cast those rows
 * to `json`, keeping jsonb's text). Verification (./verify.ts) accepts such a row only when its text
 * is exactly this, so one stored text has one reading: duplicate keys, other spacing or key
 * orders, and numbers spelled another way (`1.0`, `1e400`) are not what jsonb wrote.
 *
 * The form, as PostgreSQL 15 writes it: object keys ordered by their UTF-8 length, then byte by
 * byte; `": "` after a key and `", "` between members and items; strings escaped as JSON.stringify
 * does (jsonb holds neither U+0000 nor a lone surrogate); a number as the numeric PostgreSQL parsed
 * from JSON.stringify's spelling of it, in plain decimal. jsonb-text.test.ts holds it to a real
 * PostgreSQL.
 *
 * Guarantees: isJsonbText(text, value) holds exactly when `text` is that form of `value` (a value
 * JSON.parse returned); a string with U+0000 or a lone surrogate has no such form. It compares as it
 * walks the value, building no text for the whole (rows of up to 64 KiB, a million of them in a
 * walk). Never throws.
 */

export function isJsonbText(text: string, value: unknown): boolean {
  return matchAt(text, 0, value) === text.length;
}

/** Where the form of `value` ends when it starts at `at` in `text`, or -1. */
function matchAt(text: string, at: number, value: unknown): number {
  if (value === null || typeof value === "boolean") return literalAt(text, at, String(value));
  if (typeof value === "number") return literalAt(text, at, numericText(value));
  if (typeof value === "string") return value.includes("\u0000") || !value.isWellFormed() ? -1 : literalAt(text, at, JSON.stringify(value));
  if (typeof value !== "object") return -1;
  if (Array.isArray(value)) {
    let end = literalAt(text, at, "[");
    for (let i = 0; i < value.length && end >= 0; i++) end = matchAt(text, i === 0 ? end : literalAt(text, end, ", "), value[i]);
    return end < 0 ? -1 : literalAt(text, end, "]");
  }
  const object = value as Record<string, unknown>;
  const keys = jsonbKeyOrder(Object.keys(object));
  let end = literalAt(text, at, "{");
  for (let i = 0; i < keys.length && end >= 0; i++) {
    const key = keys[i]!;
    end = matchAt(text, i === 0 ? end : literalAt(text, end, ", "), key);
    end = matchAt(text, literalAt(text, end, ": "), object[key]);
  }
  return end < 0 ? -1 : literalAt(text, end, "}");
}

function literalAt(text: string, at: number, literal: string): number {
  return at >= 0 && text.startsWith(literal, at) ? at + literal.length : -1;
}

/** The last key list ordered, and its order: the objects of an array mostly share their keys. */
let last: { keys: string[]; ordered: string[] } = { keys: [], ordered: [] };

function jsonbKeyOrder(keys: string[]): string[] {
  if (keys.length === last.keys.length && keys.every((key, i) => key === last.keys[i])) return last.ordered;
  const bytes = keys.map((key) => ({ key, utf8: Buffer.from(key) }));
  bytes.sort((a, b) => a.utf8.length - b.utf8.length || Buffer.compare(a.utf8, b.utf8));
  last = { keys, ordered: bytes.map((b) => b.key) };
  return last.ordered;
}

/** JSON.stringify's spelling of the number (null when not finite), as numeric writes it: no exponent. */
function numericText(value: number): string {
  const spelled = JSON.stringify(value);
  const e = spelled.indexOf("e");
  if (e < 0) return spelled;
  const negative = spelled.startsWith("-");
  const mantissa = spelled.slice(negative ? 1 : 0, e);
  const point = mantissa.indexOf(".");
  const digits = mantissa.replace(".", "");
  const at = (point < 0 ? mantissa.length : point) + Number(spelled.slice(e + 1));
  const plain =
    at <= 0 ? `0.${"0".repeat(-at)}${digits}` : at >= digits.length ? digits + "0".repeat(at - digits.length) : `${digits.slice(0, at)}.${digits.slice(at)}`;
  return negative ? `-${plain}` : plain;
}
