/**
 * Builds a run's evidence file (evidence-schema.ts; docs/audit.md, "Run evidence") from the log,
 * the run's rows and the signed checkpoints. service.ts `exportEvidenceAudited` is the one door: it
 * signs a checkpoint covering the run's last event first and records the export.
 *
 * What goes in:
 * - every event whose subject is the run, up to the newest signed tree head, each with its leaf
 *   index and its inclusion proof to the *first* signed tree head holding them all (so the proof
 *   dates them: that head was signed at most a checkpoint interval after they were written), and a
 *   consistency proof from that head to the newest one;
 * - the run's content as stored: the digested columns (code, inputs manifest, plan, result, …),
 *   the policy version's text and the decision, the reviews (verdict and comment from the Review
 *   rows; name and email from the `run.reviewed` event when it records them, else from the user
 *   row), every tool call with its arguments and result (or when retention purged them), and the
 *   outcomes the agent recorded (`run.outcome_recorded`). The content is what the database holds
 *   now; if a row was changed, the file carries the change and the verifier names it.
 *
 * Cost: the proofs need the hashes of the subtrees around the run's leaves, so the whole tree up
 * to the newest head is rebuilt from the `hash` column (leaf hashes computed by PostgreSQL, about
 * one node hash per event in Node; see docs/audit.md for measured times on a log of a million).
 * The rebuilt tree must match both signed heads, or the export is refused (the log was rewritten).
 *
 * Refuses: a run that does not exist (not_found); no version 2 checkpoint to prove against, or a
 * log that no longer matches its signed heads (conflict).
 */
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { statusOfAction } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { loadCheckpoints, treeHeadOf, type CheckpointConfig, type TreeHead } from "./checkpoints";
import { EVIDENCE_KIND, EVIDENCE_VERSION, type EvidenceEvent, type UnsignedRunEvidence } from "./evidence-schema";
import { MerkleLevels } from "./merkle";

const TREE_BATCH = 100_000;

type EventRow = Omit<EvidenceEvent, "leafIndex" | "inclusionProof">;

/** The run's events up to `lastId`, with `at` exactly as the chain hashed it (as verify.ts reads them). */
async function runEvents(db: Db, runId: string, lastId: bigint): Promise<EventRow[]> {
  const rows = await db.$queryRaw<{ line: string }[]>`
    SELECT json_build_array(id::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           "actorType", "actorId", action, "subjectType", "subjectId", data, "prevHash", hash)::text AS line
    FROM "AuditEvent" WHERE "subjectType" = 'run' AND "subjectId" = ${runId} AND id <= ${lastId} ORDER BY id`;
  return rows.map(({ line }) => {
    const [id, at, actorType, actorId, action, subjectType, subjectId, data, prevHash, hash] = JSON.parse(line) as [
      string,
      string,
      string,
      string | null,
      string,
      string,
      string | null,
      Record<string, unknown>,
      string,
      string,
    ];
    return { id, at, actorType, actorId, action, subjectType, subjectId, data, prevHash, hash };
  });
}

/**
 * The tree over every event up to `lastId`, and the leaf index of each of `wanted`. Leaf hashes
 * come from PostgreSQL (sha256(0x00 ‖ hash) in C), 100,000 at a time as one bytea.
 */
async function rebuildTree(db: Db, lastId: bigint, wanted: Set<string>): Promise<{ tree: MerkleLevels; leafIndex: Map<string, number> }> {
  const tree = new MerkleLevels();
  const leafIndex = new Map<string, number>();
  let cursor = 0n;
  for (;;) {
    const [batch] = await db.$queryRaw<{ leaves: Uint8Array | null; positions: [string, number][] | null; last: string | null; count: number }[]>`
      SELECT string_agg(sha256(decode('00', 'hex') || decode(hash, 'hex')), ''::bytea ORDER BY id) AS leaves,
             json_agg(json_build_array(id::text, pos) ORDER BY id) FILTER (WHERE id::text = ANY(${[...wanted]}::text[])) AS positions,
             max(id)::text AS last, count(*)::int AS count
      FROM (SELECT id, hash, (row_number() OVER (ORDER BY id) - 1)::int AS pos
            FROM (SELECT id, hash FROM "AuditEvent" WHERE id > ${cursor} AND id <= ${lastId} ORDER BY id LIMIT ${TREE_BATCH}) AS rows) AS page`;
    if (!batch?.leaves || !batch.last) break;
    const leaves = Buffer.from(batch.leaves);
    const start = tree.size;
    for (let offset = 0; offset < leaves.length; offset += 32) tree.append(leaves.subarray(offset, offset + 32));
    for (const [id, pos] of batch.positions ?? []) leafIndex.set(id, start + pos);
    cursor = BigInt(batch.last);
    if (batch.count < TREE_BATCH) break;
  }
  return { tree, leafIndex };
}

function sameRoot(tree: MerkleLevels, head: TreeHead): boolean {
  return tree.size >= head.treeSize && tree.root(head.treeSize).toString("hex") === head.rootHash;
}

const hex = (hashes: Buffer[]) => hashes.map((h) => h.toString("hex"));

export async function buildRunEvidence(db: Db, config: CheckpointConfig, runId: string, exportedBy: string): Promise<UnsignedRunEvidence> {
  await sequenceAudit(db);
  const run = await db.run.findUnique({
    where: { id: runId },
    include: {
      agent: { select: { id: true, name: true } },
      policyVersion: { select: { id: true, version: true, text: true } },
      reviews: { orderBy: { createdAt: "asc" }, include: { reviewer: { select: { name: true, email: true } } } },
      toolCalls: { orderBy: { seq: "asc" } },
    },
  });
  if (!run) throw new AppError("not_found", `No run ${runId}.`);

  const heads = (await loadCheckpoints(config)).flatMap((c) => (c.valid && treeHeadOf(c.checkpoint) ? [treeHeadOf(c.checkpoint)!] : []));
  const latest = heads.at(-1);
  if (!latest) throw new AppError("conflict", "There is no signed tree head to prove the run's events against; run `airlock audit checkpoint`.");
  const rows = await runEvents(db, run.id, BigInt(latest.eventId));
  const { tree, leafIndex } = await rebuildTree(db, BigInt(latest.eventId), new Set(rows.map((r) => r.id)));
  const lastLeaf = Math.max(...rows.map((r) => leafIndex.get(r.id) ?? -1));
  const anchor = heads.find((h) => h.treeSize > lastLeaf);
  if (rows.length === 0 || !anchor) throw new AppError("conflict", `Run ${run.id} has no event under a signed tree head yet.`);
  for (const head of new Set([anchor, latest])) {
    if (!sameRoot(tree, head)) {
      throw new AppError(
        "conflict",
        `The log no longer matches the signed tree head of ${head.at} (event #${head.eventId}, ${head.treeSize} events): run \`airlock audit verify\`.`,
      );
    }
  }

  const events: EvidenceEvent[] = rows.map((row) => {
    const index = leafIndex.get(row.id)!;
    return { ...row, leafIndex: index, inclusionProof: hex(tree.inclusionProof(index, anchor.treeSize)) };
  });
  const reviewedBy = new Map(
    rows
      .filter((r) => r.action === "run.reviewed" && r.actorType === "user" && r.actorId)
      .map((r) => [r.actorId!, r.data.reviewer as { name?: unknown; email?: unknown } | undefined]),
  );
  const text = (value: unknown, fallback: string) => (typeof value === "string" ? value : fallback);

  return {
    kind: EVIDENCE_KIND,
    version: EVIDENCE_VERSION,
    exportedAt: new Date().toISOString(),
    exportedBy,
    // The status as of the signed tree head (the row may have moved on since the checkpoint).
    run: {
      id: run.id,
      agentId: run.agent.id,
      agentName: run.agent.name,
      status: rows.map((r) => statusOfAction(r.action)).findLast((s) => s !== null) ?? run.status,
    },
    events,
    content: {
      code: run.code,
      language: run.language,
      purpose: run.purpose,
      provenance: run.provenance,
      inputs: run.inputs,
      javascript: run.javascript,
      limits: run.limits,
      plan: run.plan,
      result: run.result,
      error: run.error,
      execution: run.execution,
      purged: (run.purged ?? {}) as Record<string, string>,
      policy: {
        versionId: run.policyVersion?.id ?? null,
        version: run.policyVersion?.version ?? null,
        text: run.policyVersion?.text ?? null,
        decision: run.decision,
        decisionReasons: run.decisionReasons,
        approvalsRequired: run.approvalsRequired,
      },
      reviews: run.reviews.map((review) => {
        const named = reviewedBy.get(review.reviewerId);
        return {
          reviewerId: review.reviewerId,
          name: text(named?.name, review.reviewer.name),
          email: text(named?.email, review.reviewer.email),
          verdict: review.verdict,
          comment: review.comment,
          at: review.createdAt.toISOString(),
        };
      }),
      toolCalls: run.toolCalls.map((call) => ({
        seq: call.seq,
        server: call.server,
        tool: call.tool,
        phase: call.phase,
        outcome: call.outcome,
        readOnly: call.readOnly,
        at: call.at.toISOString(),
        durationMs: call.durationMs,
        error: call.error,
        argsDigest: call.argsDigest,
        resultDigest: call.resultDigest,
        args: call.purgedAt ? null : call.args,
        result: call.purgedAt ? null : call.result,
        purged: call.purgedAt ? `purged on ${call.purgedAt.toISOString().slice(0, 10)} by retention` : null,
      })),
      outcomes: rows
        .filter((r) => r.action === "run.outcome_recorded")
        .map((r) => ({ eventId: r.id, action: text(r.data.action, ""), detail: typeof r.data.detail === "string" ? r.data.detail : null })),
    },
    proof: { treeHead: anchor, latestTreeHead: latest, consistencyProof: hex(tree.consistencyProof(anchor.treeSize, latest.treeSize)) },
  };
}
