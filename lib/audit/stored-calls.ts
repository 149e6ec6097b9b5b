/**
 * How a tool call's arguments and result are stored in "RunToolCall", written by the run's recorder
 * (lib/runs/call-recorder.ts) and a plan preview (lib/runs/preview.ts), checked by verification
 * (./verify.ts).
 *
 * Guarantees:
 * - each is stored as its canonical JSON (lib/canonical-json.ts) written as it is into a `json`
 *   column, which keeps the text: the stored bytes are the bytes its digest (jsonDigest) covers, so
 *   verification hashes them without parsing;
 * - past MAX_STORED_CALL_BYTES the text is the marker `{"bytes":n,"truncated":true}`, and the digest
 *   is still of the whole value;
 * - each value is written as canonical text once: the digest is of that text, and what is stored is
 *   that text or, past the cap, the marker.
 * Refused: nothing here screens or normalizes a value; the callers do (lib/runs/gate.ts).
 */
import { canonicalJson } from "@/lib/canonical-json";
import type { Tx } from "@/lib/db";
import { sha256Hex } from "@/lib/digest";

/** Bytes of one call's args or result kept in RunToolCall; digests always cover all of it. */
export const MAX_STORED_CALL_BYTES = 64 * 1024;

/**
 * Is `value` the marker storedJson keeps instead of a value past MAX_STORED_CALL_BYTES? Only a
 * `bytes` past the cap: a smaller one is a value, or a forged marker standing for any digest.
 */
export function isTruncationMarker(value: unknown): boolean {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const { bytes, truncated, ...rest } = value as Record<string, unknown>;
  return truncated === true && Number.isSafeInteger(bytes) && (bytes as number) > MAX_STORED_CALL_BYTES && Object.keys(rest).length === 0;
}

/** A call's arguments or result as stored: the text kept, and the digest of the whole value. */
export type StoredJson = { text: string; digest: string };

/** `value` as stored: its canonical JSON and that text's digest (jsonDigest), the text replaced by its size past the cap. */
export function storedJson(value: unknown): StoredJson {
  const text = canonicalJson(value ?? null);
  const bytes = Buffer.byteLength(text);
  return { text: bytes <= MAX_STORED_CALL_BYTES ? text : canonicalJson({ truncated: true, bytes }), digest: sha256Hex(text) };
}

/** A tool call as inserted: the run's calls in "apply", a plan preview's in "preview". */
export type ToolCallInsert = {
  seq: number;
  server: string;
  tool: string;
  readOnly: boolean;
  phase: "apply" | "preview";
  args: StoredJson;
  result: StoredJson | null;
  durationMs: number;
  outcome: "started" | "ok" | "error" | "refused" | "intercepted";
  error: string | null;
};

/** Inserts tool calls of a run in one statement, their arguments and results as their stored text. */
export async function insertToolCalls(db: Pick<Tx, "$executeRaw">, runId: string, calls: ToolCallInsert[]): Promise<void> {
  await db.$executeRaw`
    INSERT INTO "RunToolCall" ("runId", seq, server, tool, "readOnly", phase, "argsDigest", args, "resultDigest", result, "durationMs", outcome, error)
    SELECT ${runId}::uuid, c.seq, c.server, c.tool, c.read_only, c.phase, c.args_digest, c.args::json, c.result_digest, c.result::json, c.duration_ms, c.outcome, c.error
    FROM unnest(${calls.map((c) => c.seq)}::int[], ${calls.map((c) => c.server)}::text[], ${calls.map((c) => c.tool)}::text[],
                ${calls.map((c) => c.readOnly)}::boolean[], ${calls.map((c) => c.phase)}::text[], ${calls.map((c) => c.args.digest)}::text[],
                ${calls.map((c) => c.args.text)}::text[], ${calls.map((c) => c.result?.digest ?? null)}::text[], ${calls.map((c) => c.result?.text ?? null)}::text[],
                ${calls.map((c) => c.durationMs)}::int[], ${calls.map((c) => c.outcome)}::text[], ${calls.map((c) => c.error)}::text[])
      AS c(seq, server, tool, read_only, phase, args_digest, args, result_digest, result, duration_ms, outcome, error)`;
}
