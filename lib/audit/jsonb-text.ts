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
 * Guarantees: for a value JSON.parse returned, the text, or null when jsonb could not have held it
 * (a string with U+0000 or a lone surrogate). Never throws.
 */

export function jsonbText(value: unknown): string | null {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") return numericText(value);
  if (typeof value === "string") return value.includes("\u0000") || !value.isWellFormed() ? null : JSON.stringify(value);
  if (Array.isArray(value)) return joined(value.map(jsonbText), "[", "]");
  if (typeof value !== "object") return null;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort(byJsonbOrder);
  const members = keys.map((key) => {
    const member = jsonbText(object[key]);
    const name = jsonbText(key);
    return member === null || name === null ? null : `${name}: ${member}`;
  });
  return joined(members, "{", "}");
}

function joined(parts: (string | null)[], open: string, close: string): string | null {
  return parts.includes(null) ? null : `${open}${parts.join(", ")}${close}`;
}

function byJsonbOrder(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length - y.length || Buffer.compare(x, y);
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
