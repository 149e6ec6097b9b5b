/**
 * The post-execution gate's screening of what a run produced and what its tools returned, before
 * anything is stored, sealed or handed over: the one normalization of untrusted content (PostgreSQL
 * cannot store NUL or lone surrogates, lib/untrusted/storable-text.ts) and secret redaction
 * (lib/untrusted/secrets.ts: API keys, tokens, private keys, connection strings).
 *
 * Guarantees:
 * - a tool's result is screened before the script sees it: a credential an upstream returns never
 *   enters the sandbox, so the script cannot pass it on, encoded or not; its stored copy and digest
 *   are of the screened value;
 * - a tool call's arguments are stored screened (the upstream gets them as the script sent them),
 *   and a plan's writes are planned and followed in their screened form; a write the screen would
 *   rewrite is never planned nor made under a plan (`unreviewableArguments`): reviewers approve
 *   what the upstream gets;
 * - an upstream's error message is screened before it is stored or handed to the script;
 * - the result, logs, error (message and stack) and the gate report's texts are screened before
 *   the terminal write, so the audit log holds no secret the detector knows either;
 * - every redaction is named in the gate report (`redactions`: where, and which kind of secret,
 *   never the secret) and flags the envelope `secret_redacted`; any normalization flags it
 *   `content_normalized`.
 * Refuses nothing: it rewrites. It finds known credential shapes only (see secrets.ts).
 */
import type { Envelope, JsonValue } from "@/lib/sandbox";
import { redactSecrets, redactSecretsInJson, redactSecretsInMessage } from "@/lib/untrusted/secrets";
import { CONTENT_NORMALIZED_FLAG, normalizeContent } from "@/lib/untrusted/storable-text";

export const SECRET_REDACTED_FLAG = "secret_redacted";

export type Redaction = { where: string; kind: string };

export type Screened<T> = { value: T; changed: boolean; redactions: Redaction[] };

/** Normalizes and redacts one JSON value (a tool result, arguments to store); `where` prefixes each redaction's path. */
export function screenJson(value: unknown, where: string): Screened<JsonValue> {
  const normalized = normalizeContent((value ?? null) as JsonValue);
  const redacted = redactSecretsInJson(normalized.value);
  return {
    value: redacted.value,
    changed: normalized.changed,
    redactions: redacted.redactions.map((r) => ({ where: r.path ? `${where}.${r.path}`.replace(/\.\[/g, "[") : where, kind: r.kind })),
  };
}

/**
 * Why a write's arguments cannot be bound by a plan reviewers approve, or null: the screen
 * rewrote them (a secret redacted, what PostgreSQL or Prisma cannot store replaced), so what
 * reviewers see is not what the upstream would get, and two different writes would look the same.
 * Names the kinds of secret, never a secret. `normalized`: the arguments were normalized before
 * they were screened.
 */
export function unreviewableArguments(normalized: boolean, screened: Screened<JsonValue>): string | null {
  if (screened.redactions.length > 0) {
    const kinds = [...new Set(screened.redactions.map((r) => r.kind))].join(", ");
    return `its arguments hold what looks like a credential (${kinds}), which is redacted wherever it is shown`;
  }
  if (normalized || screened.changed) return "its arguments hold what cannot be stored as sent (U+0000, a lone surrogate or a __proto__ key)";
  return null;
}

/**
 * An upstream's or a preview's error, as it may be stored and shown: normalized, secrets redacted,
 * also where a schema check's JSON Pointer escaped a key holding one (`redactSecretsInMessage`).
 */
export function screenMessage(error: unknown, where: string): Screened<string> {
  const normalized = normalizeContent(error instanceof Error ? error.message : String(error));
  const { text, kinds } = redactSecretsInMessage(normalized.value);
  return { value: text, changed: normalized.changed, redactions: kinds.map((kind) => ({ where, kind })) };
}

function screenText(text: string, where: string, into: Redaction[]): string {
  const { text: out, kinds } = redactSecrets(text);
  for (const kind of kinds) into.push({ where, kind });
  return out;
}

/**
 * The envelope as it is stored and handed over: normalized, secrets redacted, with the
 * redactions of its tool calls (`toolRedactions`, from screenJson) added to its gate report.
 * `alreadyNormalized`: a tool call's content was normalized on the way.
 */
export function screenEnvelope(envelope: Envelope, alreadyNormalized: boolean, toolRedactions: readonly Redaction[]): Envelope {
  const content = normalizeContent({ result: envelope.result, logs: envelope.logs, error: envelope.error, gate: envelope.gate });
  const redactions: Redaction[] = [...toolRedactions];
  const result = content.value.result === null ? null : screenJson(content.value.result, "result");
  if (result) redactions.push(...result.redactions);
  const logs = content.value.logs.map((line, i) => ({ ...line, text: screenText(line.text, `logs[${i}]`, redactions) }));
  const error = content.value.error && {
    ...content.value.error,
    message: screenText(content.value.error.message, "error.message", redactions),
    ...(content.value.error.detail !== undefined ? { detail: screenText(content.value.error.detail, "error.detail", redactions) } : {}),
  };
  const gate = content.value.gate;
  const screenedGate = {
    ...gate,
    checks: gate.checks.map((c, i) => ({
      ...c,
      label: screenText(c.label, `checks[${i}].label`, redactions),
      message: screenText(c.message, `checks[${i}].message`, redactions),
    })),
    assumptions: gate.assumptions.map((a, i) => screenText(a, `assumptions[${i}]`, redactions)),
    partial: gate.partial === null ? null : screenText(gate.partial, "partial", redactions),
    redactions,
  };
  const flags = [...envelope.flags];
  if ((content.changed || alreadyNormalized) && !flags.includes(CONTENT_NORMALIZED_FLAG)) flags.push(CONTENT_NORMALIZED_FLAG);
  if (redactions.length > 0) flags.push(SECRET_REDACTED_FLAG);
  return { ...envelope, result: result ? result.value : null, logs, error, gate: screenedGate, flags };
}
