/**
 * Fast generator of a realistic audit log for bench/audit.ts.
 *
 * Writes `runs` runs (code, purpose, result, logs — searchable text with a controlled vocabulary:
 * every run says "invoices", exactly one run in RARE_EVERY says `rareWord(k)`) and ~10 audit
 * events per run with a valid hash chain (computed here with the same chainHash as the app), plus
 * sealed tool calls for one run in TOOL_RUN_EVERY. Rows go in with multi-row
 * `INSERT … SELECT FROM unnest($arrays)` over one pg connection, thousands per statement — no
 * per-row round trips — and the id sequence is moved past the last event at the end.
 *
 * Only for throwaway benchmark databases: it assumes an empty log.
 */
import { createHash, randomUUID } from "node:crypto";
import type pg from "pg";
import { chainHash, GENESIS_HASH } from "@/lib/audit/record";
import { canonicalJson } from "@/lib/canonical-json";
import { toolCallsDigest } from "@/lib/audit/seal";

export const RARE_EVERY = 10_000;
export const TOOL_RUN_EVERY = 100;
const TOOLS_PER_RUN = 5;
const BATCH_RUNS = 2_000;

const STATUSES = ["succeeded", "succeeded", "succeeded", "failed", "denied", "rejected", "timed_out"] as const;
const TOOLS = ["ledger.listInvoices", "ledger.getCustomer", "ledger.addNote", "crm.searchContacts", "docs.search"];
const DATA_CLASSES = ["internal", "confidential", "pii", "financial", "public"];
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

  let prevHash = GENESIS_HASH;
  let eventId = 0n;
  let toolCallCount = 0;
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
      decision: [] as string[],
      caps: [] as string[],
      facts: [] as string[],
      result: [] as string[],
      stats: [] as string[],
      createdAt: [] as string[],
    };
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
      const status = pick(STATUSES, n);
      const decision = status === "denied" ? "deny" : n % 3 === 0 ? "escalate" : "allow";
      const tool = pick(TOOLS, n);
      const words = [pick(WORDS, n), pick(WORDS, n * 7 + 3), pick(WORDS, n * 13 + 5)];
      const rare = n % RARE_EVERY === 0 ? ` ${rareWord(n / RARE_EVERY)}` : "";
      const code = `const rows = await tools.${tool}({ limit: ${n % 500} });\n// ${words.join(" ")}${rare}\nreturn rows.filter((r) => r.${words[0]}).length; // run ${n}`;
      const createdAt = new Date(start.getTime() + n * stepMs);
      const codeSha = sha256(code);
      if (n === Math.floor(options.runs / 2)) sampleCodeHash = codeSha;
      run.id.push(id);
      run.agentId.push(agentIds[agentIndex]!);
      run.status.push(status);
      run.code.push(code);
      run.sha.push(codeSha);
      run.purpose.push(`Summarise ${words[1]} invoices by ${words[2]}${rare}`);
      run.decision.push(decision);
      run.caps.push(JSON.stringify([tool]));
      run.facts.push(JSON.stringify({ dataClasses: [pick(DATA_CLASSES, n)] }));
      run.result.push(JSON.stringify({ count: n % 97, note: `${words[2]} invoices checked` }));
      run.stats.push(
        JSON.stringify({
          wallMs: 120,
          cpuMs: 80,
          peakRssMb: 40,
          toolCalls: 1,
          logs: [{ level: "log", text: `processed ${n % 500} ${words[0]} invoices` }],
          flags: [],
          truncated: false,
          artifacts: [],
        }),
      );
      run.createdAt.push(createdAt.toISOString());

      const agentActor = { type: "agent", id: agentIds[agentIndex]! };
      const system = { type: "system", id: "runs" };
      const reviewer = { type: "user", id: userIds[(n * 3) % userIds.length]! };
      let t = createdAt.getTime();
      const next = () => new Date((t += 500));
      push(new Date(t), agentActor, "run.submitted", id, { codeSha256: codeSha, purpose: run.purpose.at(-1), language: "javascript" });
      push(next(), system, "run.analyzed", id, { capabilitySet: [tool], findings: [] });
      if (decision === "deny") {
        push(next(), system, "run.denied", id, { decision, policyVersion: 1, reasons: ["policy0"] });
      } else {
        push(next(), system, decision === "allow" ? "run.auto_approved" : "run.pending_review", id, { decision, policyVersion: 1 });
        if (decision === "escalate") push(next(), reviewer, status === "rejected" ? "run.rejected" : "run.approved", id, { comment: `looks fine ${words[1]}` });
        if (status !== "rejected") {
          push(next(), system, "run.queued", id, {});
          push(next(), system, "run.running", id, { executorId: "bench" });
          const calls = [];
          if (n % TOOL_RUN_EVERY === 0) {
            for (let seq = 1; seq <= TOOLS_PER_RUN; seq++) {
              const args = { limit: seq };
              const result = { rows: seq };
              const row = {
                seq,
                server: tool.split(".")[0]!,
                tool: tool.split(".")[1]!,
                argsDigest: sha256(canonicalJson(args)),
                resultDigest: sha256(canonicalJson(result)),
                outcome: "ok",
              };
              calls.push(row);
              call.runId.push(id);
              call.seq.push(seq);
              call.server.push(row.server);
              call.tool.push(row.tool);
              call.argsDigest.push(row.argsDigest);
              call.resultDigest.push(row.resultDigest);
              call.args.push(JSON.stringify(args));
              call.result.push(JSON.stringify(result));
            }
          }
          push(next(), { type: "system", id: "executor" }, `run.${status}`, id, {
            toolCalls: calls.length,
            toolCallsDigest: toolCallsDigest(calls),
            resultDigest: sha256(run.result.at(-1)!),
          });
          // Agents poll their result a few times; each read is an event in this simulated workload.
          for (let k = 0; k < 3; k++) push(next(), agentActor, "run.result_read", id, { poll: k });
        }
      }
    }

    await client.query(
      `INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", decision, "capabilitySet", facts, result, execution, "createdAt", "updatedAt")
       SELECT id, agent, status, 'javascript', code, sha, purpose, $13, sha, decision, caps, facts, result, stats, created, created
       FROM unnest($1::uuid[], $2::uuid[], $3::"RunStatus"[], $4::text[], $5::text[], $6::text[], $7::"Decision"[], $8::jsonb[], $9::jsonb[], $10::jsonb[], $11::jsonb[], $12::timestamptz[])
         AS t(id, agent, status, code, sha, purpose, decision, caps, facts, result, stats, created)`,
      [run.id, run.agentId, run.status, run.code, run.sha, run.purpose, run.decision, run.caps, run.facts, run.result, run.stats, run.createdAt, sha256("[]")],
    );
    if (call.runId.length) {
      await client.query(
        `INSERT INTO "RunToolCall" ("runId", seq, server, tool, "argsDigest", "resultDigest", args, result, "durationMs", outcome)
         SELECT r, s, sv, tl, ad, rd, a, re, 3, 'ok' FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[]) AS t(r, s, sv, tl, ad, rd, a, re)`,
        [call.runId, call.seq, call.server, call.tool, call.argsDigest, call.resultDigest, call.args, call.result],
      );
      toolCallCount += call.runId.length;
    }
    await client.query(
      `INSERT INTO "AuditEvent" (id, at, "actorType", "actorId", action, "subjectType", "subjectId", data, "prevHash", hash)
       SELECT id, at, at2, aid, act, 'run', sid, d, ph, h
       FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::text[], $9::text[])
         AS t(id, at, at2, aid, act, sid, d, ph, h)`,
      [ev.id, ev.at, ev.actorType, ev.actorId, ev.action, ev.subjectId, ev.data, ev.prevHash, ev.hash],
    );
  }
  await client.query(`SELECT setval(pg_get_serial_sequence('"AuditEvent"', 'id'), $1)`, [eventId.toString()]);
  await client.query(`ANALYZE`);
  return {
    runs: options.runs,
    events: Number(eventId),
    toolCalls: toolCallCount,
    firstAt: start,
    lastAt: new Date(start.getTime() + options.runs * stepMs),
    sampleCodeHash,
    agents,
    emails,
  };
}
