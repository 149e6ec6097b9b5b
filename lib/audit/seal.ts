/**
 * Tool-call seals: a run's calls ("RunToolCall" rows, ordered by seq) are bound into the audit
 * chain by the run's terminal event, which carries `toolCalls` (their number) and
 * `toolCallsDigest` (sha256 over the canonical JSON of the sealed fields). Every terminal
 * transition writes one (lib/runs/states.ts), so `airlock audit verify` can tell a call that was
 * added, removed or changed afterwards. Only these fields are sealed; the stored arguments and
 * results are covered through their digests.
 */
import type { Tx } from "@/lib/db";
import { jsonDigest } from "@/lib/digest";

/** The fields of a tool call that the audit chain seals, as stored in RunToolCall. */
export type SealedCall = { seq: number; server: string; tool: string; argsDigest: string; resultDigest: string | null; outcome: string };

export function toolCallsDigest(calls: readonly SealedCall[]): string {
  const sealed = calls.map(({ seq, server, tool, argsDigest, resultDigest, outcome }) => ({ seq, server, tool, argsDigest, resultDigest, outcome }));
  return jsonDigest(sealed);
}

/** The seal of every call a run has on record (all attempts), read in the caller's transaction. */
export async function sealToolCalls(tx: Tx, runId: string): Promise<{ toolCalls: number; toolCallsDigest: string }> {
  const calls = await tx.runToolCall.findMany({
    where: { runId },
    orderBy: { seq: "asc" },
    select: { seq: true, server: true, tool: true, argsDigest: true, resultDigest: true, outcome: true },
  });
  return { toolCalls: calls.length, toolCallsDigest: toolCallsDigest(calls) };
}
