/**
 * Benchmark of the audit log: prints one JSON object.
 *
 * On a throwaway PostgreSQL (never DATABASE_URL's database): migrate, seed ~1,000,000 chained
 * events over 100k runs sized like the demo's, each with its tool calls' arguments and results and
 * its content digests (bench/audit-seed.ts), then measure with the app's own code:
 * - append: recordAudit, one transaction per event, sequential and 4 concurrent, and five events a
 *   transaction (five statements, and one as intake's createRun stages them), until every event
 *   is chained (events/s), against the previous lock-per-event append measured in the same run;
 * - seal: one run's 5,000 tool calls written + sealed by one terminal event, as the executor does;
 * - searchPage: the audit page's server work (audited search, last verification, suggestions)
 *   against the search alone and the last verification's previous lookup; target ≤ 300 ms;
 * - search: p50/p95 of five representative searches (rare word, common word, filter only, code
 *   hash, time range), 20 runs each with varying parameters, through searchRuns;
 * - verify: verifyAuditChain over the whole chain — hashes, checkpoints, tool-call seals and every
 *   run's content digests recomputed from its row;
 * - export: prepareExport JSONL and CSV of the whole log into a counting sink (rows/s);
 * - evidence: exportEvidenceAudited for the oldest reviewed run and the newest run (the whole tree rebuilt for
 *   the proofs), and verifyRunEvidence of each file offline with the public key;
 * - exportChecked: the whole JSONL export again, checked as it streams by verifyAuditExport (what
 *   `airlock audit verify-export` runs), anchored by the latest checkpoint: against the export
 *   alone above, what the check adds. A file that does not verify fails the benchmark.
 * Targets: search p95 ≤ 150 ms, verify ≤ 30 s, export ≥ 50,000 rows/s.
 *
 * BENCH_AUDIT_RUNS overrides the number of runs (e.g. 2000 for a quick smoke run).
 */
import { cpus } from "node:os";
import { Readable } from "node:stream";
import pg from "pg";
import { tempCheckpoints } from "@/lib/audit/testing";
import { prepareExport } from "@/lib/audit/export";
import type { AuditFilters } from "@/lib/audit/filters";
import { chainHash, GENESIS_HASH, recordAudit, recordAuditEvents } from "@/lib/audit/record";
import { startAuditSequencer } from "@/lib/audit/sequencer";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { canonicalJson } from "@/lib/canonical-json";
import { searchRuns } from "@/lib/audit/search";
import { verifyAuditChain } from "@/lib/audit/verify";
import { checkpointAudited, exportEvidenceAudited, searchAudited } from "@/lib/audit/service";
import { filterSuggestions, lastVerification } from "@/lib/audit/presenter";
import { loadCheckpoints, loadSigningKey } from "@/lib/audit/checkpoints";
import { verifyAuditExport } from "@/lib/audit/export-verify";
import { parseEvidence, verifyRunEvidence } from "@/lib/audit/evidence-verify";
import { createPrismaClient, type Tx } from "@/lib/db";
import { applyMigrations } from "@/lib/db/migrate";
import { startPostgres } from "@/lib/db/postgres-server";
import { toolCallsDigest } from "@/lib/audit/seal";
import { insertToolCalls, storedJson } from "@/lib/audit/stored-calls";
import { RARE_EVERY, rareWord, seedAuditBench } from "./audit-seed";
import { sha256Hex } from "@/lib/digest";

const RUNS = Number(process.env.BENCH_AUDIT_RUNS ?? 100_000);
const SEARCH_ITERATIONS = 20;
const SYSTEM = { type: "system", name: "bench" } as const;
const COMPLIANCE = { type: "user", id: "bench-compliance", email: "compliance@example.com", role: "compliance" } as const;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
const round = (n: number, digits = 1) => Number(n.toFixed(digits));

async function main() {
  const server = await startPostgres({ persistent: false });
  const db = createPrismaClient(server.url);
  const client = new pg.Client({ connectionString: server.url });
  try {
    await applyMigrations(server.url);
    await client.connect();

    let t = performance.now();
    const seeded = await seedAuditBench(client, { runs: RUNS });
    const seedSeconds = (performance.now() - t) / 1000;

    // Append rate. Baseline, in the same run: the previous design, where each transaction took the
    // chain's advisory lock, read the head and inserted its chained event before committing.
    // Airlock: recordAudit stages the event and the background sequencer chains batches; the clock
    // stops when every event is chained.
    const lockedEvent = async (tx: Tx, i: number) => {
      const [last] = await tx.$queryRaw<{ hash: string }[]>`SELECT hash FROM "AuditEvent" ORDER BY id DESC LIMIT 1`;
      const event = { at: new Date(), actorType: "system", actorId: "bench", action: "bench.locked", subjectType: "bench", subjectId: String(i), data: { i } };
      const prevHash = last?.hash ?? GENESIS_HASH;
      await tx.$executeRaw`
        INSERT INTO "AuditEvent" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "prevHash", "hash")
        VALUES (${event.at.toISOString()}::timestamptz, 'system', 'bench', 'bench.locked', 'bench', ${event.subjectId}, ${canonicalJson(event.data)}::jsonb, ${prevHash}, ${chainHash(prevHash, event)})`;
    };
    const stagedEvent = (tx: Tx, i: number) =>
      recordAudit(tx, { actor: SYSTEM, action: "bench.append", subject: { type: "bench", id: String(i) }, data: { i } });
    /** A run's intake: its events staged in one statement (lib/runs/states.ts createRun). */
    const stagedTogether = (tx: Tx, i: number, count: number) =>
      recordAuditEvents(
        tx,
        Array.from({ length: count }, (_, k) => ({ actor: SYSTEM, action: "bench.append", subject: { type: "bench", id: String(i) }, data: { i, k } })),
      );
    type Design = "locked" | "staged" | "stagedTogether";
    /** One transaction of `perTransaction` events; the baseline takes the lock first, as it did. */
    const transaction = (design: Design, perTransaction: number) => (i: number) =>
      db.$transaction(async (tx) => {
        if (design === "stagedTogether") return stagedTogether(tx, i, perTransaction);
        if (design === "locked") await tx.$executeRaw`SELECT pg_advisory_xact_lock(7231004417)`;
        for (let k = 0; k < perTransaction; k++) await (design === "locked" ? lockedEvent(tx, i) : stagedEvent(tx, i));
      });
    const APPENDS = 4000;
    /** Events per second, from the first transaction until every event is chained. */
    const appendRate = async (design: Design, writers: number, perTransaction = 1) => {
      const sequencer = startAuditSequencer(db);
      const append = transaction(design, perTransaction);
      const transactions = APPENDS / perTransaction;
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: writers }, async () => {
          while (next < transactions) await append(next++);
        }),
      );
      await sequencer.close();
      await sequenceAudit(db);
      return Math.round(APPENDS / ((performance.now() - t0) / 1000));
    };
    // The ceiling of one event per transaction here: empty interactive transactions per second.
    let emptyNext = 0;
    const emptyStart = performance.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (emptyNext++ < APPENDS) await db.$transaction(async () => {});
      }),
    );
    const emptyTransactionsPerSecond = Math.round(APPENDS / ((performance.now() - emptyStart) / 1000));
    const append = {
      baselineLockPerEvent: {
        sequential: await appendRate("locked", 1),
        concurrent4: await appendRate("locked", 4),
        concurrent4FiveEventsPerTransaction: await appendRate("locked", 4, 5),
      },
      stagedAndBatched: {
        sequential: await appendRate("staged", 1),
        concurrent4: await appendRate("staged", 4),
        concurrent4FiveEventsPerTransaction: await appendRate("staged", 4, 5),
        concurrent4FiveEventsInOneStatement: await appendRate("stagedTogether", 4, 5),
      },
      emptyTransactionsPerSecondConcurrent4: emptyTransactionsPerSecond,
      events: APPENDS,
      targetConcurrent4EventsPerSecond: 5000,
    };

    // Tool calls: many per run, sealed by one chained event (what lib/runs/executor.ts finish() does).
    const SEAL_CALLS = 5000;
    const [someRun] = await db.$queryRaw<{ id: string; agentId: string }[]>`SELECT id::text, "agentId"::text FROM "Run" LIMIT 1`;
    const sealRun = await db.run.create({
      data: {
        agentId: someRun!.agentId,
        language: "javascript",
        code: "/* seal bench */",
        codeSha256: sha256Hex("/* seal bench */"),
        purpose: "seal bench",
        inputsDigest: "0".repeat(64),
        requestDigest: "1".repeat(64),
        status: "succeeded",
      },
    });
    // Its submission, as intake records one (verification refuses a run no submission wrote).
    await db.$transaction((tx) =>
      recordAudit(tx, { actor: SYSTEM, action: "run.submitted", subject: { type: "run", id: sealRun.id }, data: { codeSha256: sealRun.codeSha256 } }),
    );
    const calls = Array.from({ length: SEAL_CALLS }, (_, i) => ({
      seq: i + 1,
      server: "ledger",
      tool: "getCustomer",
      readOnly: true,
      phase: "apply" as const,
      args: storedJson({ id: i }),
      result: storedJson({ ok: i }),
      durationMs: 1,
      outcome: "ok" as const,
      error: null,
    }));
    t = performance.now();
    await db.$transaction(
      async (tx) => {
        for (let i = 0; i < calls.length; i += 100) await insertToolCalls(tx, sealRun.id, calls.slice(i, i + 100));
        await recordAudit(tx, {
          actor: SYSTEM,
          action: "run.succeeded",
          subject: { type: "run", id: sealRun.id },
          data: {
            toolCalls: calls.length,
            toolCallsDigest: toolCallsDigest(calls.map((c) => ({ ...c, argsDigest: c.args.digest, resultDigest: c.result.digest }))),
          },
        });
      },
      { timeout: 120_000 },
    ); // Prisma's default 5 s is too short for thousands of calls here
    const sealMs = performance.now() - t;

    await client.query("ANALYZE");

    // Searches.
    const day = 86_400_000;
    const span = seeded.lastAt.getTime() - seeded.firstAt.getTime();
    const rareCount = Math.max(1, Math.floor(RUNS / RARE_EVERY));
    const [hashes] = [
      (await client.query<{ sha: string }>(`SELECT "codeSha256" AS sha FROM "Run" ORDER BY random() LIMIT ${SEARCH_ITERATIONS}`)).rows.map((r) => r.sha),
    ];
    const kinds: Record<string, (i: number) => AuditFilters> = {
      rareWord: (i) => ({ q: rareWord(i % rareCount) }),
      commonWord: (i) => ({ q: ["invoices", "overdue invoices", "customer", "refund"][i % 4] }),
      filterOnly: (i) => ({
        status: (["failed", "succeeded", "timed_out", "denied"] as const)[i % 4],
        decision: (["escalate", "allow"] as const)[i % 2],
        agent: `agent-${i % 50}`,
      }),
      codeHash: (i) => ({ codeHash: hashes[i % hashes.length]! }),
      timeRange: (i) => {
        const since = new Date(seeded.firstAt.getTime() + ((i * 7919) % Math.max(1, span - day)));
        return { since, until: new Date(since.getTime() + day) };
      },
    };
    const searches: Record<string, { p50: number; p95: number; max: number; avgResults: number }> = {};
    const all: number[] = [];
    for (const [name, make] of Object.entries(kinds)) {
      await searchRuns(db, make(0)); // warm
      const samples: number[] = [];
      let results = 0;
      for (let i = 0; i < SEARCH_ITERATIONS; i++) {
        const s = performance.now();
        const page = await searchRuns(db, make(i));
        samples.push(performance.now() - s);
        results += page.items.length;
      }
      samples.sort((a, b) => a - b);
      all.push(...samples);
      searches[name] = {
        p50: round(quantile(samples, 0.5)),
        p95: round(quantile(samples, 0.95)),
        max: round(samples.at(-1)!),
        avgResults: round(results / SEARCH_ITERATIONS),
      };
    }
    all.sort((a, b) => a - b);

    // The audit search page's server work (app/(console)/audit/page.tsx): the audited search, the
    // last verification and the filter suggestions, in parallel, against the search query alone
    // (above) and the last verification as it was looked up before (ordered by id: the whole log
    // walked backwards when no verification is recent).
    const timed = async (fn: () => Promise<unknown>, n = SEARCH_ITERATIONS) => {
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const s = performance.now();
        await fn();
        samples.push(performance.now() - s);
      }
      samples.sort((a, b) => a - b);
      return { p50: round(quantile(samples, 0.5)), p95: round(quantile(samples, 0.95)) };
    };
    let pageIteration = 0;
    const searchPage = {
      page: await timed(() => {
        const filters = Object.values(kinds)[pageIteration % 5]!(pageIteration++);
        return Promise.all([searchAudited(db, COMPLIANCE, filters), lastVerification(db), filterSuggestions(db)]);
      }, 50),
      lastVerification: await timed(() => lastVerification(db)),
      lastVerificationOrderedById: await timed(() => db.auditEvent.findFirst({ where: { action: "audit.verified" }, orderBy: { id: "desc" } }), 3),
      targetMs: 300,
    };

    // Verification of the whole chain, with one checkpoint signed beforehand so it is checked too
    // (a bootstrap: the seeded events are older than any scheduled checkpoint could be).
    const checkpoints = await tempCheckpoints();
    t = performance.now();
    const bootstrap = await checkpointAudited(db, SYSTEM, checkpoints, { bootstrap: true });
    const bootstrapSeconds = (performance.now() - t) / 1000;
    if (!bootstrap.checkpointFile) throw new Error(`the bootstrap checkpoint was refused: ${JSON.stringify(bootstrap.report.broken)}`);
    t = performance.now();
    const report = await verifyAuditChain(db, { checkpoints });
    const verifySeconds = (performance.now() - t) / 1000;

    // Export.
    const exportRate = async (format: "jsonl" | "csv") => {
      const s = performance.now();
      const prepared = await prepareExport(db, {}, format, "bench");
      let bytes = 0;
      for await (const chunk of prepared.rows) bytes += chunk.length;
      const seconds = (performance.now() - s) / 1000;
      return {
        rows: prepared.manifest.rowCount,
        seconds: round(seconds, 2),
        rowsPerSecond: Math.round(prepared.manifest.rowCount / seconds),
        megabytes: round(bytes / 1e6),
      };
    };
    const jsonl = await exportRate("jsonl");
    const csv = await exportRate("csv");

    // Evidence of the oldest and the newest run: export (checkpoint, tree rebuild, proofs) and offline check.
    const key = await loadSigningKey(checkpoints.keyFile);
    const evidence: Record<string, unknown> = {};
    for (const [name, query] of [
      ["oldestReviewedRun", `SELECT "runId"::text AS id FROM "Review" ORDER BY "createdAt" LIMIT 1`],
      ["newestRun", `SELECT id::text FROM "Run" ORDER BY "createdAt" DESC, id DESC LIMIT 1`],
    ] as const) {
      const runId = (await client.query<{ id: string }>(query)).rows[0]!.id;
      const s = performance.now();
      const file = await exportEvidenceAudited(db, SYSTEM, checkpoints, runId);
      const exportMs = performance.now() - s;
      const text = JSON.stringify(file);
      const v = performance.now();
      const verdict = verifyRunEvidence(parseEvidence(text), key.publicKey);
      evidence[name] = {
        exportSeconds: round(exportMs / 1000, 2),
        verifyMs: round(performance.now() - v),
        status: verdict.status,
        problems: verdict.problems,
        events: file.events.length,
        toolCalls: file.content.toolCalls.length,
        kilobytes: round(text.length / 1000),
        treeSize: file.proof.latestTreeHead.treeSize,
        inclusionProofHashes: file.events[0]!.inclusionProof.length,
      };
    }

    // The export checked as it streams, anchored by the newest checkpoint (the evidence exports signed it).
    const newest = (await loadCheckpoints(checkpoints)).findLast((loaded) => loaded.valid);
    if (!newest?.valid) throw new Error("no valid checkpoint to anchor the export");
    const checkStarted = performance.now();
    const checkedExport = await prepareExport(db, {}, "jsonl", "bench");
    const verdict = await verifyAuditExport(Readable.from(checkedExport.rows), { checkpoint: newest.checkpoint, publicKey: key.publicKey });
    const checkSeconds = (performance.now() - checkStarted) / 1000;
    if (verdict.status !== "ok") throw new Error(`the export did not verify: ${JSON.stringify(verdict).slice(0, 2_000)}`);
    const exportChecked = {
      rows: verdict.events,
      seconds: round(checkSeconds, 2),
      rowsPerSecond: Math.round(verdict.events / checkSeconds),
      anchoredThrough: verdict.anchoredThrough?.eventId,
      toolCallSeals: verdict.toolCallSeals,
      notes: verdict.notes,
      baselineExportAloneSeconds: jsonl.seconds,
    };

    const totalEvents = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM "AuditEvent"`)).rows[0]!.n);
    console.log(
      JSON.stringify(
        {
          machine: {
            cpus: cpus().length,
            node: process.version,
            postgres: (await client.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version,
          },
          seed: {
            runs: seeded.runs,
            events: seeded.events,
            toolCalls: seeded.toolCalls,
            toolCallPayloadMegabytes: round(seeded.toolCallPayloadBytes / 1e6),
            seconds: round(seedSeconds),
            eventsPerSecond: Math.round(seeded.events / seedSeconds),
          },
          append,
          toolCallSeal: { calls: SEAL_CALLS, ms: round(sealMs), callsPerSecond: Math.round(SEAL_CALLS / (sealMs / 1000)) },
          searchPage,
          search: { ...searches, overall: { p50: round(quantile(all, 0.5)), p95: round(quantile(all, 0.95)) }, targetP95Ms: 150 },
          verify: {
            ok: report.ok,
            events: report.eventsChecked,
            seals: report.sealsChecked,
            toolCalls: report.toolCallsChecked,
            runsContentChecked: report.runsContentChecked,
            seconds: round(verifySeconds, 2),
            bootstrapCheckpointSeconds: round(bootstrapSeconds, 2),
            eventsPerSecond: Math.round(report.eventsChecked / verifySeconds),
            targetSeconds: 30,
            broken: report.broken,
          },
          export: { jsonl, csv, targetRowsPerSecond: 50_000 },
          evidence,
          exportChecked,
          totalEvents,
        },
        null,
        2,
      ),
    );
  } finally {
    await client.end().catch(() => {});
    await db.$disconnect();
    await server.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
