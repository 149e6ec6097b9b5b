/**
 * Fast generator of a realistic audit log for bench/audit.ts.
 *
 * Writes `runs` runs shaped and sized like the demo's (bench/audit-workload.ts: the scripts, the
 * prompts and the ledger's real answers — every run's tool calls with their arguments and
 * results), searchable text with a controlled vocabulary (exactly one run in RARE_EVERY says
 * `rareWord(k)`), and ~10 audit events per run with a valid hash chain (computed here with the
 * same chainHash as the app). The events carry what the app's carry for verification: the content
 * digests of every run column people read (lib/audit/run-content.ts), and the terminal event's
 * seal of the tool calls (lib/audit/seal.ts), so `verifyAuditChain` checks all of it. Rows go in
 * with multi-row `INSERT … SELECT FROM unnest($arrays)` over one pg connection, thousands per
 * statement — no per-row round trips — and the id sequence is moved past the last event at the end.
 *
 * Only for throwaway benchmark databases: it assumes an empty log.
 */
import { createHash, randomUUID } from "node:crypto";
import type pg from "pg";
import { chainHash, GENESIS_HASH } from "@/lib/audit/record";
import { TRANSITION_CONTENT } from "@/lib/audit/run-content";
import { canonicalJson } from "@/lib/canonical-json";
import { storedJson } from "@/lib/audit/stored-calls";
import { toolCallsDigest } from "@/lib/audit/seal";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { seedWorkload } from "./audit-workload";

export const RARE_EVERY = 10_000;
const BATCH_RUNS = 1_000;

/** Reads are decided by policy alone; writes are escalated to reviewers. */
const STATUSES = ["succeeded", "succeeded", "succeeded", "succeeded", "failed", "denied", "timed_out"] as const;
const WRITE_STATUSES = ["succeeded", "succeeded", "rejected", "failed"] as const;
const TERMINAL_FIELDS = TRANSITION_CONTENT;
const LIMITS = { timeoutMs: 30_000, cpuSeconds: 10, heapMb: 128, maxToolCalls: 100, writeCaps: {} };
const WORDS = [
  "overdue",
  "customer",
  "segment",
  "quarterly",
  "reconcile",
  "refund",
  "ledger",
  "balance",
  "vendor",
  "payment",
  "summary",
  "export",
  "region",
  "churn",
  "renewal",
  "discount",
  "tax",
  "audit",
  "forecast",
  "pipeline",
];

export function rareWord(k: number): string {
  return `zanzibar${k}`;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function pick<T>(list: readonly T[], n: number): T {
  return list[n % list.length]!;
}

export type SeedResult = {
  runs: number;
  events: number;
  toolCalls: number;
  /** Bytes of tool-call arguments and results, as JSON text. */
  toolCallPayloadBytes: number;
  firstAt: Date;
  lastAt: Date;
  sampleCodeHash: string;
  agents: string[];
  emails: string[];
};

export async function seedAuditBench(client: pg.Client, options: { runs: number; start?: Date }): Promise<SeedResult> {
  const start = options.start ?? new Date("2026-01-01T00:00:00Z");
  const emails = Array.from({ length: 20 }, (_, i) => `person${i}@example.com`);
  const userIds = emails.map(() => randomUUID());
  await client.query(`INSERT INTO "User" (id, email, name, role) SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::"Role"[])`, [
    userIds,
    emails,
    emails.map((e) => e.split("@")[0]),
    emails.map((_, i) => pick(["admin", "reviewer", "compliance"], i)),
  ]);
  const agents = Array.from({ length: 50 }, (_, i) => `agent-${i}`);
  const agentIds = agents.map(() => randomUUID());
  await client.query(`INSERT INTO "Agent" (id, name, "ownerId") SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[])`, [
    agentIds,
    agents,
    agents.map((_, i) => userIds[i % userIds.length]),
  ]);

  // One published policy version that every decision names, as intake stores it.
  const policy = { id: randomUUID(), text: defaultPolicyText() };
  await client.query(`INSERT INTO "PolicyVersion" (id, version, status, text, "publishedAt") VALUES ($1, 1, 'published', $2, $3)`, [
    policy.id,
    policy.text,
    start.toISOString(),
  ]);
  const policyTextDigest = sha256(policy.text);
  const REASONS = {
    allow: [{ policyId: "allow-read-only", reason: "Read-only runs are allowed." }],
    escalate: [{ policyId: "review-writes", reason: "State-changing runs need two reviewers." }],
    deny: [{ policyId: "deny-critical-findings", reason: "Critical findings are never run." }],
  } as const;

  let prevHash = GENESIS_HASH;
  let eventId = 0n;
  let toolCallCount = 0;
  let payloadBytes = 0;
  let sampleCodeHash = "";
  const stepMs = 30_000; // one run every 30 s of simulated time
  for (let base = 0; base < options.runs; base += BATCH_RUNS) {
    const run = {
      id: [] as string[],
      agentId: [] as string[],
      status: [] as string[],
      code: [] as string[],
      sha: [] as string[],
      purpose: [] as string[],
      provenance: [] as string[],
      decision: [] as string[],
      caps: [] as string[],
      facts: [] as string[],
      javascript: [] as (string | null)[],
      limits: [] as (string | null)[],
      result: [] as (string | null)[],
      error: [] as (string | null)[],
      stats: [] as (string | null)[],
      reasons: [] as string[],
      createdAt: [] as string[],
    };
    const review = { runId: [] as string[], reviewerId: [] as string[], verdict: [] as string[], comment: [] as string[], at: [] as string[] };
    const ev = {
      id: [] as string[],
      at: [] as string[],
      actorType: [] as string[],
      actorId: [] as (string | null)[],
      action: [] as string[],
      subjectId: [] as string[],
      data: [] as string[],
      prevHash: [] as string[],
      hash: [] as string[],
    };
    const call = {
      runId: [] as string[],
      seq: [] as number[],
      server: [] as string[],
      tool: [] as string[],
      argsDigest: [] as string[],
      resultDigest: [] as string[],
      args: [] as string[],
      result: [] as string[],
      readOnly: [] as boolean[],
    };

    const push = (at: Date, actor: { type: string; id: string | null }, action: string, runId: string, data: Record<string, unknown>) => {
      const event = { at, actorType: actor.type, actorId: actor.id, action, subjectType: "run", subjectId: runId, data: JSON.parse(canonicalJson(data)) };
      const hash = chainHash(prevHash, event);
      eventId++;
      ev.id.push(eventId.toString());
      ev.at.push(at.toISOString());
      ev.actorType.push(actor.type);
      ev.actorId.push(actor.id);
      ev.action.push(action);
      ev.subjectId.push(runId);
      ev.data.push(canonicalJson(data));
      ev.prevHash.push(prevHash);
      ev.hash.push(hash);
      prevHash = hash;
    };

    for (let n = base; n < Math.min(base + BATCH_RUNS, options.runs); n++) {
      const id = randomUUID();
      const agentIndex = n % agents.length;
      const words = [pick(WORDS, n), pick(WORDS, n * 7 + 3), pick(WORDS, n * 13 + 5)];
      const rare = n % RARE_EVERY === 0 ? ` ${rareWord(n / RARE_EVERY)}` : "";
      const work = seedWorkload(n, words, rare);
      const status = work.writes ? pick(WRITE_STATUSES, n) : pick(STATUSES, n);
      const decision = status === "denied" ? "deny" : work.writes ? "escalate" : "allow";
      const ran = status !== "denied" && status !== "rejected";
      const createdAt = new Date(start.getTime() + n * stepMs);
      const codeSha = sha256(work.code);
      if (n === Math.floor(options.runs / 2)) sampleCodeHash = codeSha;
      const calls = ran ? work.calls.slice(0, status === "failed" ? 1 : work.calls.length) : [];
      const failed = status === "failed" || status === "timed_out";
      // The columns exactly as the app stores them (what verification digests).
      const content = {
        code: work.code,
        language: "javascript",
        purpose: work.purpose,
        provenance: { model: "claude-sonnet-4-5", conversationId: `conv-${n % 5000}`, prompt: work.prompt },
        inputs: [],
        javascript: decision === "deny" ? null : work.code,
        limits: decision === "deny" ? null : LIMITS,
        plan: null,
        result: ran && !failed ? work.result : null,
        error: failed ? { code: status === "timed_out" ? "TIMEOUT" : "SCRIPT_ERROR", message: `the script stopped: ${words[0]}` } : null,
        execution: ran
          ? { wallMs: 120 + (n % 400), cpuMs: 80, peakRssMb: 40, toolCalls: calls.length, logs: work.logs, flags: [], truncated: false, artifacts: [] }
          : null,
      };
      const digests = (fields: readonly (keyof typeof content)[]) => Object.fromEntries(fields.map((f) => [f, sha256(canonicalJson(content[f]))]));
      run.id.push(id);
      run.agentId.push(agentIds[agentIndex]!);
      run.status.push(status);
      run.code.push(content.code);
      run.sha.push(codeSha);
      run.purpose.push(content.purpose);
      run.provenance.push(JSON.stringify(content.provenance));
      run.decision.push(decision);
      run.caps.push(JSON.stringify([...new Set(work.calls.map((c) => `${c.server}.${c.tool}`))]));
      run.facts.push(JSON.stringify({ dataClasses: [work.dataClass] }));
      run.javascript.push(content.javascript);
      run.limits.push(content.limits && JSON.stringify(content.limits));
      run.result.push(content.result && JSON.stringify(content.result));
      run.error.push(content.error && JSON.stringify(content.error));
      run.stats.push(content.execution && JSON.stringify(content.execution));
      run.reasons.push(JSON.stringify(REASONS[decision]));
      run.createdAt.push(createdAt.toISOString());

      const agentActor = { type: "agent", id: agentIds[agentIndex]! };
      const system = { type: "system", id: "runs" };
      const reviewer = { type: "user", id: userIds[(n * 3) % userIds.length]! };
      let t = createdAt.getTime();
      const next = () => new Date((t += 500));
      push(new Date(t), agentActor, "run.submitted", id, {
        codeSha256: codeSha,
        purpose: content.purpose,
        language: "javascript",
        contentDigests: digests(["code", "language", "purpose", "provenance", "inputs"]),
      });
      push(next(), system, "run.analyzed", id, { capabilitySet: JSON.parse(run.caps.at(-1)!), findings: [], contentDigests: digests(["javascript"]) });
      const reasons = REASONS[decision];
      const decided = {
        decision,
        policyVersion: 1,
        policyTextDigest,
        decisionReasonsDigest: sha256(canonicalJson(reasons)),
        reasons: reasons.map((r) => r.policyId),
        approvalsRequired: decision === "escalate" ? 1 : 0,
      };
      if (decision === "deny") {
        push(next(), system, "run.denied", id, { ...decided, contentDigests: digests(TERMINAL_FIELDS) });
      } else {
        push(next(), system, decision === "allow" ? "run.auto_approved" : "run.pending_review", id, { ...decided, contentDigests: digests(["limits"]) });
        if (decision === "escalate") {
          const verdict = status === "rejected" ? "reject" : "approve";
          const comment = `looks fine ${words[1]}`;
          push(next(), reviewer, "run.viewed", id, { status: "pending_review" });
          const reviewedAt = next();
          push(reviewedAt, reviewer, "run.reviewed", id, { verdict, comment });
          review.runId.push(id);
          review.reviewerId.push(reviewer.id);
          review.verdict.push(verdict);
          review.comment.push(comment);
          review.at.push(reviewedAt.toISOString());
          if (status === "rejected") push(next(), system, "run.rejected", id, { contentDigests: digests(TERMINAL_FIELDS) });
          else push(next(), system, "run.approved", id, {});
        }
        if (ran) {
          push(next(), system, "run.queued", id, {});
          push(next(), system, "run.running", id, { executorId: "bench" });
          const sealed = calls.map((c, i) => {
            // Stored as the recorder stores them (lib/audit/stored-calls.ts).
            const args = storedJson(c.args);
            const result = storedJson(c.result);
            const row = { seq: i + 1, server: c.server, tool: c.tool, argsDigest: args.digest, resultDigest: result.digest, outcome: "ok" };
            call.runId.push(id);
            call.seq.push(row.seq);
            call.server.push(row.server);
            call.tool.push(row.tool);
            call.argsDigest.push(row.argsDigest);
            call.resultDigest.push(row.resultDigest);
            call.args.push(args.text);
            call.result.push(result.text);
            call.readOnly.push(!(work.writes && c.tool === "issueRefund"));
            return row;
          });
          push(next(), { type: "system", id: "executor" }, `run.${status}`, id, {
            toolCalls: sealed.length,
            toolCallsDigest: toolCallsDigest(sealed),
            contentDigests: digests(TERMINAL_FIELDS),
          });
          // Agents poll their result a few times; each read is an event in this simulated workload.
          for (let k = 0; k < 4; k++) push(next(), agentActor, "run.result_read", id, { poll: k });
        }
      }
    }

    // One transaction a chunk: a review is refused at commit without its run.reviewed event in the same one.
    await client.query("BEGIN");
    await client.query(
      `INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, provenance, "inputsDigest", "requestDigest", decision, "capabilitySet", facts,
                          javascript, limits, result, error, execution, "createdAt", "updatedAt", "policyVersionId", "decisionReasons", "approvalsRequired")
       SELECT id, agent, status, 'javascript', code, sha, purpose, prov, $17, sha, decision, caps, facts, js, lim, res, err, stats, created, created,
              $18::uuid, reasons, CASE WHEN decision = 'escalate' THEN 1 ELSE 0 END
       FROM unnest($1::uuid[], $2::uuid[], $3::"RunStatus"[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::"Decision"[], $9::jsonb[], $10::jsonb[],
                   $11::text[], $12::jsonb[], $13::jsonb[], $14::jsonb[], $15::jsonb[], $16::timestamptz[], $19::jsonb[])
         AS t(id, agent, status, code, sha, purpose, prov, decision, caps, facts, js, lim, res, err, stats, created, reasons)`,
      [
        run.id,
        run.agentId,
        run.status,
        run.code,
        run.sha,
        run.purpose,
        run.provenance,
        run.decision,
        run.caps,
        run.facts,
        run.javascript,
        run.limits,
        run.result,
        run.error,
        run.stats,
        run.createdAt,
        sha256("[]"),
        policy.id,
        run.reasons,
      ],
    );
    await client.query(
      `INSERT INTO "Review" (id, "runId", "reviewerId", verdict, comment, "createdAt")
       SELECT gen_random_uuid(), r, u, v, c, a FROM unnest($1::uuid[], $2::uuid[], $3::"Verdict"[], $4::text[], $5::timestamptz[]) AS t(r, u, v, c, a)`,
      [review.runId, review.reviewerId, review.verdict, review.comment, review.at],
    );
    if (call.runId.length) {
      await client.query(
        `INSERT INTO "RunToolCall" ("runId", seq, server, tool, "argsDigest", "resultDigest", args, result, "durationMs", outcome, "readOnly")
         SELECT r, s, sv, tl, ad, rd, a::json, re::json, 3, 'ok', ro
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::boolean[]) AS t(r, s, sv, tl, ad, rd, a, re, ro)`,
        [call.runId, call.seq, call.server, call.tool, call.argsDigest, call.resultDigest, call.args, call.result, call.readOnly],
      );
      toolCallCount += call.runId.length;
      payloadBytes += call.args.reduce((sum, a) => sum + a.length, 0) + call.result.reduce((sum, r) => sum + r.length, 0);
    }
    await client.query(
      `INSERT INTO "AuditEvent" (id, at, "actorType", "actorId", action, "subjectType", "subjectId", data, "prevHash", hash)
       SELECT id, at, at2, aid, act, 'run', sid, d, ph, h
       FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::text[], $9::text[])
         AS t(id, at, at2, aid, act, sid, d, ph, h)`,
      [ev.id, ev.at, ev.actorType, ev.actorId, ev.action, ev.subjectId, ev.data, ev.prevHash, ev.hash],
    );
    await client.query("COMMIT");
    // These runs ended long ago: their search documents were built then (lib/audit/search-refresh.ts).
    let built: number;
    do built = (await client.query<{ built: number }>(`SELECT "airlock_search_refresh"(10000, true) AS built`)).rows[0]!.built;
    while (built === 10000);
  }
  await client.query(`SELECT setval(pg_get_serial_sequence('"AuditEvent"', 'id'), $1)`, [eventId.toString()]);
  await client.query(`VACUUM (ANALYZE)`);
  return {
    runs: options.runs,
    events: Number(eventId),
    toolCalls: toolCallCount,
    toolCallPayloadBytes: payloadBytes,
    firstAt: start,
    lastAt: new Date(start.getTime() + options.runs * stepMs),
    sampleCodeHash,
    agents,
    emails,
  };
}
