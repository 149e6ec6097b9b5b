/**
 * The call recorder (./call-recorder.ts) on a real PostgreSQL: completed calls reach the database
 * while the run goes on, not only when it ends, in completion order and once each; a write that
 * fails is reported by flush, never lost silently; arguments and results are stored as the very
 * text their digests cover.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { canonicalJson } from "@/lib/canonical-json";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { MAX_STORED_CALL_BYTES, storedJson } from "@/lib/audit/stored-calls";
import { CallRecorder, StorageRejected, type CallRow } from "./call-recorder";

let db: TestDatabase;
let agentId: string;

const runningRun = () => insertRun(db, agentId, { status: "running", purpose: "recorder test" });

const call = (seq: number): CallRow => ({
  seq,
  server: "ledger",
  tool: "listInvoices",
  readOnly: true,
  args: storedJson({ seq }),
  result: storedJson({ rows: seq }),
  durationMs: 1,
  outcome: "ok",
  error: null,
  started: false,
});

const recorded = async (runId: string) =>
  (await db.prisma.runToolCall.findMany({ where: { runId }, orderBy: { id: "asc" }, select: { seq: true } })).map((c) => c.seq);

beforeAll(async () => {
  ({ db, agentId } = await databaseWithAgent("recorder"));
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe("call recorder", () => {
  it("writes a completed call at once, and what completes during a write right after it, in order", async () => {
    const runId = await runningRun();
    const recorder = new CallRecorder(db.prisma, { runId, executorId: "test", attempt: 1 });
    recorder.add(call(1));
    // On record while the run goes on: nobody flushed.
    await expect.poll(() => recorded(runId), { timeout: 2_000, interval: 10 }).toEqual([1]);
    for (let seq = 2; seq <= 250; seq++) recorder.add(call(seq));
    await recorder.flush();
    expect(await recorded(runId)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
  });

  it("reports a write that failed when flushed, and writes nothing after it", async () => {
    const runId = await runningRun();
    const recorder = new CallRecorder(db.prisma, { runId, executorId: "test", attempt: 1 });
    recorder.add(call(1));
    await recorder.flush();
    recorder.add(call(1)); // the same seq again: the unique key refuses it
    recorder.add(call(2));
    await expect(recorder.flush()).rejects.toBeInstanceOf(StorageRejected);
    expect(await recorded(runId)).toEqual([1]);
  });

  it("stores arguments and results as the canonical text their digests cover, and a value past the cap as its size", async () => {
    const runId = await insertRun(db, agentId, { status: "running", purpose: "recorder test", executorId: "test", attempt: 1 });
    const recorder = new CallRecorder(db.prisma, { runId, executorId: "test", attempt: 1 });
    const args = { z: [3, { y: "ü\u0001", b: 1e21 }], a: -0, "10": null, "2": true };
    const big = { rows: Array.from({ length: 3000 }, (_, i) => ({ name: `row ${i}`, value: i * 1.5 })) };
    expect(Buffer.byteLength(canonicalJson(big))).toBeGreaterThan(MAX_STORED_CALL_BYTES);
    recorder.add({ ...call(1), args: storedJson(args), result: storedJson(big) });
    // A call to a tool with an effect: started first, then completed with its result.
    const started = { ...call(2), readOnly: false, args: storedJson({ b: 2, a: 1 }), result: null };
    await recorder.start(started);
    recorder.add({ ...started, result: storedJson({ ok: true, id: "r-1" }) });
    await recorder.flush();
    const rows = await db.prisma.$queryRaw<{ seq: number; argsDigest: string; args: string; resultDigest: string; result: string }[]>`
      SELECT seq, "argsDigest", args::text AS args, "resultDigest", result::text AS result FROM "RunToolCall" WHERE "runId" = ${runId}::uuid ORDER BY seq`;
    expect(rows).toEqual([
      {
        seq: 1,
        argsDigest: jsonDigest(args),
        args: '{"2":true,"10":null,"a":0,"z":[3,{"b":1e+21,"y":"ü\\u0001"}]}',
        resultDigest: jsonDigest(big),
        result: `{"bytes":${Buffer.byteLength(canonicalJson(big))},"truncated":true}`,
      },
      {
        seq: 2,
        argsDigest: jsonDigest({ a: 1, b: 2 }),
        args: '{"a":1,"b":2}',
        resultDigest: jsonDigest({ id: "r-1", ok: true }),
        result: '{"id":"r-1","ok":true}',
      },
    ]);
    expect(sha256Hex(rows[0]!.args)).toBe(rows[0]!.argsDigest);
    // Read back through Prisma, the value is the value.
    const read = await db.prisma.runToolCall.findFirstOrThrow({ where: { runId, seq: 1 } });
    expect(read.args).toEqual(JSON.parse(canonicalJson(args)));
  });
});
