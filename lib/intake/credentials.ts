/**
 * Credentials in what an agent submits. Whatever intake stores stays in the run's row, reviewers'
 * screens, exports and the append-only audit log for good, and a script never needs a credential:
 * the broker calls every tool with its upstream's own (docs/sandbox.md).
 *
 * Guarantees:
 * - `refuseCredentials` throws a bad_request naming the field, the kind of credential and, in code,
 *   its line, before anything is stored; the message never quotes the credential. It looks at the
 *   agent's code (for call_tool and run_skill, their arguments: the rest of their script is
 *   Airlock's or a reviewed skill's), the purpose, the idempotency key and the inputs' names, as
 *   written and as read: NFKC-folded and zero-width joiners dropped (full-width `ｓｋ＿ｌｉｖｅ＿…`,
 *   or a key split by a joiner, reads as the key to a model and a person alike);
 * - `redactedProvenance` replaces each credential in the provenance (the model, conversation id,
 *   prompt and context an agent reports: text of its conversation, which a person may have pasted a
 *   key into) with `[REDACTED:<kind>]`: refusing would lose the run for text the agent did not write.
 *
 * Refuses only the shapes lib/untrusted/secrets.ts detects; a credential split, encoded or built at
 * run time is not found (a script that wants one stored can always do so), and short passwords pass.
 */
import { AppError } from "@/lib/errors";
import { asRead, findSecrets, redactSecrets, type SecretKind } from "@/lib/untrusted/secrets";

/** Where a submission's code came from: an agent's script, or a call's arguments written into one (call_tool, run_skill). */
export type CodeOrigin = "code" | "arguments";

export function refuseCredentials(input: {
  scanned: { text: string; origin: CodeOrigin };
  purpose: string;
  idempotencyKey?: string;
  inputs: readonly string[];
}): void {
  const { text, origin } = input.scanned;
  const inCode = firstCredential(text);
  if (inCode) {
    const where = origin === "code" ? `code: line ${inCode.line} holds` : "arguments: they hold";
    throw refusal(origin, `${where} what looks like a credential (${inCode.kind})`, inCode);
  }
  const others: [field: string, text: string | undefined][] = [
    ["purpose", input.purpose],
    ["idempotencyKey", input.idempotencyKey],
    ...input.inputs.map((name, i): [string, string] => [`inputs.${i}`, name]),
  ];
  for (const [field, value] of others) {
    const found = value === undefined ? null : firstCredential(value);
    if (found) throw refusal(field, `${field}: it holds what looks like a credential (${found.kind})`, found);
  }
}

export function redactedProvenance<T extends Record<string, string | undefined>>(provenance: T): T {
  const out: Record<string, string | undefined> = {};
  for (const [field, text] of Object.entries(provenance)) out[field] = text === undefined ? text : redactSecrets(text).text;
  return out as T;
}

function refusal(field: string, what: string, found: { kind: SecretKind; line: number }): AppError {
  return new AppError(
    "bad_request",
    `${what}. Nothing was stored: a run never needs one (Airlock calls every tool with its upstream's own credentials), ` +
      `and what you submit is kept in the audit log for good. Remove it and submit again.`,
    { details: { field, reason: "credential", kind: found.kind, ...(field === "code" ? { line: found.line } : {}) } },
  );
}

/** The first credential in `text`, as written or as read (lib/untrusted/secrets.ts asRead), and the line it starts on. */
function firstCredential(text: string): { kind: SecretKind; line: number } | null {
  const read = asRead(text);
  for (const candidate of read === null ? [text] : [text, read]) {
    const [span] = findSecrets(candidate);
    if (span) return { kind: span.kind, line: lineOf(candidate, span.start) };
  }
  return null;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}
