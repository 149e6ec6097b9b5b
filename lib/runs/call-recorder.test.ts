/**
 * The call recorder (./call-recorder.ts) on a real PostgreSQL: completed calls reach the database
 * while the run goes on, not only when it ends, in completion order and once each; a write that
 * fails is reported by flush, never lost silently.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { CallRecorder, StorageRejected, type CallRow } from "./call-recorder";

let db: TestDatabase;
let agentId: string;

const runningRun = () => insertRun(db, agentId, { status: "running", purpose: "recorder test" });

const call = (seq: number): CallRow => ({
  seq,
  server: "ledger",
  tool: "listInvoices",
  readOnly: true,
  argsDigest: `a${seq}`,
  resultDigest: `r${seq}`,
  args: { seq },
  result: { rows: seq },
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
});
