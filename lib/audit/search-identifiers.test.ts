import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { searchRuns } from "./search";
import { refreshSearchDocuments } from "./search-refresh";
import { startAuditSequencer } from "./sequencer";
import { recordReview, sha256 } from "./testing";

let db: TestDatabase;
let agentId: string;
let n = 0;

async function run(
  code: string,
  extra: { purpose?: string; provenance?: object; result?: object; execution?: object; agentId?: string; status?: "queued" | "running" | "succeeded" } = {},
) {
  n++;
  const row = await db.prisma.run.create({
    data: {
      agentId: extra.agentId ?? agentId,
      language: "javascript",
      code,
      codeSha256: sha256(code),
      purpose: extra.purpose ?? `Run ${n}`,
      provenance: extra.provenance ?? {},
      inputsDigest: sha256("[]"),
      requestDigest: sha256(`search-${n}`),
      status: extra.status ?? "succeeded",
      decision: "allow",
      ...(extra.result ? { result: extra.result } : {}),
      ...(extra.execution ? { execution: extra.execution } : {}),
    },
  });
  return row.id;
}

async function call(runId: string, seq: number, args: object | null, result: object | null) {
  await db.prisma.runToolCall.create({
    data: {
      runId,
      seq,
      server: "ledger",
      tool: "getCustomer",
      argsDigest: sha256(JSON.stringify(args)),
      resultDigest: sha256(JSON.stringify(result)),
      ...(args ? { args } : {}),
      ...(result ? { result } : {}),
      durationMs: 1,
      outcome: "ok",
    },
  });
}

const ids = async (q: string) => (await searchRuns(db.prisma, { q })).items.map((i) => i.id).sort();
/** Whether the run's search document is still to be built. */
const owed = async (runId: string) =>
  (await db.prisma.$queryRaw<{ owed: boolean }[]>`SELECT "searchVector" IS NULL AS owed FROM "Run" WHERE id = ${runId}::uuid`)[0]!.owed;

let refundA: string;
let refundB: string;
let other: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const owner = await db.prisma.user.create({ data: { email: "Dana.Owner@Example.com", name: "Dana Whitfield", role: "admin" } });
  agentId = (await db.prisma.agent.create({ data: { name: "Billing-Refunds_bot", ownerId: owner.id } })).id;
  refundA = await run(`const r = await tools.ledger.issueRefund({ invoiceId: "inv-1" });\nreturn r;`);
  refundB = await run(`for (const id of batch) await tools.ledger.issueRefund({ invoiceId: id });`);
  other = await run(`return await tools.ledger.listInvoices({ status: "open" });`, {
    provenance: { model: "claude-opus", conversationId: "conv-7781", prompt: "Tidy the quokka backlog" },
  });
});
afterAll(() => db?.drop());

describe("identifiers match by their parts", () => {
  it("finds tools.ledger.issueRefund by issueRefund, refund, ledger.issueRefund and the whole name", async () => {
    const both = [refundA, refundB].sort();
    expect(await ids("issueRefund")).toEqual(both);
    expect(await ids("refund")).toEqual(both);
    expect(await ids("ledger.issueRefund")).toEqual(both);
    expect(await ids("tools.ledger.issueRefund")).toEqual(both);
    expect(await ids("ISSUEREFUND")).toEqual(both);
    expect(await ids("invoiceId")).toEqual(both);
    expect(await ids("invoice")).toEqual([refundA, refundB, other].sort()); // listInvoices too
    // Parts must be in order: "refund issue" is not the identifier.
    expect(await ids(`"refund issue"`)).toEqual([]);
  });

  it("keeps web-search syntax: or, -word, quoted phrases", async () => {
    expect(await ids("issueRefund -batch")).toEqual([refundA]);
    expect(await ids("-issueRefund listInvoices")).toEqual([other]);
    expect(await ids("quokka or issueRefund")).toEqual([refundA, refundB, other].sort());
    expect(await ids(`"ledger issue refund"`)).toEqual([refundA, refundB].sort());
    expect(await ids("the")).toEqual([]);
  });

  it("searches the provenance: model, conversation and prompt", async () => {
    expect(await ids("quokka")).toEqual([other]);
    expect(await ids("conv-7781")).toEqual([other]);
    expect(await ids("claude-opus")).toEqual([other]);
  });

  it("searches tool-call arguments and results written after the run, and forgets purged ones", async () => {
    const id = await run(`return await tools.ledger.getCustomer({ id: "c-1" });`);
    expect(await ids("wombat")).toEqual([]);
    await call(id, 1, { customerId: "c-1", note: "wombat escalation" }, { tier: "platinumTier" });
    expect(await ids("wombat")).toEqual([id]);
    expect(await ids("platinum")).toEqual([id]);
    expect(await ids("customerId")).toEqual([id]);
    // Retention NULLs payloads and the run's vector (another module does it; the contract is this).
    await db.prisma.$executeRawUnsafe(`ALTER TABLE "RunToolCall" DISABLE TRIGGER "RunToolCall_no_update_delete"`);
    await db.prisma.$executeRaw`UPDATE "RunToolCall" SET args = NULL, result = NULL WHERE "runId" = ${id}::uuid`;
    await db.prisma.$executeRawUnsafe(`ALTER TABLE "RunToolCall" ENABLE TRIGGER "RunToolCall_no_update_delete"`);
    expect(await ids("wombat")).toEqual([]);
    expect(await ids("getCustomer")).toEqual([id]);
  });

  it("indexes the calls a running run makes after its document was built once it leaves running, before any search reads", async () => {
    const id = await run(`return await tools.ledger.getCustomer({ id: "c-2" });`, { status: "running" });
    await call(id, 1, { customerId: "c-2", note: "numbat escalation" }, { tier: "goldTier" });
    // A search builds the running run's owed document, with the calls recorded so far.
    expect(await owed(id)).toBe(true);
    expect(await ids("numbat")).toEqual([id]);
    // A later batch of calls does not rebuild it while the run is running, nor does the write that ends it: that leaves it owed.
    await call(id, 2, { customerId: "c-2", note: "quoll follow-up" }, null);
    expect(await ids("quoll")).toEqual([]);
    await db.prisma.run.update({ where: { id }, data: { status: "succeeded" } });
    expect(await owed(id)).toBe(true);
    // The search builds what is owed before it reads.
    expect(await ids("quoll")).toEqual([id]);
    expect(await owed(id)).toBe(false);
    expect(await ids("numbat")).toEqual([id]);
    expect(await ids("goldTier")).toEqual([id]);
  });

  it("owes a new run's document; the background builds those of runs neither queued nor running, a search every one", async () => {
    const queued = await run(`return await tools.ledger.getCustomer({ id: "c-4" });`, { purpose: "wallaby audit", status: "queued" });
    const id = await run(`return await tools.ledger.getCustomer({ id: "c-3" });`, { status: "running" });
    await call(id, 1, { customerId: "c-3", note: "bilby escalation" }, null);
    await db.prisma.run.update({ where: { id }, data: { status: "failed" } });
    expect(await owed(id)).toBe(true);
    expect(await owed(queued)).toBe(true);
    const sequencer = startAuditSequencer(db.prisma);
    try {
      await expect.poll(() => owed(id), { timeout: 5_000, interval: 50 }).toBe(false);
    } finally {
      await sequencer.close();
    }
    // The background leaves a queued run's row to its executor; a search builds it first.
    expect(await owed(queued)).toBe(true);
    expect(await ids("wallaby")).toEqual([queued]);
    expect(await owed(queued)).toBe(false);
    const [row] = await db.prisma.$queryRaw<{ found: boolean }[]>`
      SELECT "searchVector" @@ websearch_to_tsquery('english', 'bilby') AS found FROM "Run" WHERE id = ${id}::uuid`;
    expect(row?.found).toBe(true);
  });

  it("builds at most the batch it is asked for", async () => {
    await refreshSearchDocuments(db.prisma, "all");
    const batch: string[] = [];
    for (let i = 0; i < 12; i++) batch.push(await run(`return "numbat ${i}";`));
    const owedCount = async () => (await Promise.all(batch.map(owed))).filter(Boolean).length;
    expect(await owedCount()).toBe(12);
    for (const left of [7, 2]) {
      const [row] = await db.prisma.$queryRaw<{ built: number }[]>`SELECT "airlock_search_refresh"(5, true) AS built`;
      expect(row?.built).toBe(5);
      expect(await owedCount()).toBe(left);
    }
    expect(await refreshSearchDocuments(db.prisma, "all")).toBe(2);
  });

  it("refuses a batch size outside 1 to 10,000", async () => {
    for (const size of [0, 10_001]) {
      await expect(db.prisma.$queryRaw`SELECT "airlock_search_refresh"(${size}::integer, true)`).rejects.toThrow(/a batch is 1 to 10000 runs/);
    }
  });

  it("caps a huge run's document so building it still succeeds", async () => {
    const words = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i.toString(36)}Zq_${i}.x${i}Y`).join(" ");
    const huge = words("code", 60_000);
    const id = await run(huge, {
      purpose: words("purpose", 20_000),
      provenance: { prompt: words("prompt", 30_000), context: words("ctx", 30_000) },
      result: { text: words("result", 60_000) },
    });
    await db.prisma.runToolCall.createMany({
      data: Array.from({ length: 250 }, (_, i) => ({
        runId: id,
        seq: i + 1,
        server: "ledger",
        tool: "getCustomer",
        argsDigest: sha256(`a${i}`),
        resultDigest: sha256(`r${i}`),
        args: { blob: words(`a${i}k`, 500) },
        result: { blob: words(`r${i}k`, 500) },
        durationMs: 1,
        outcome: "ok",
      })),
    });
    // Built by the refresh every search makes first; the size before compression (a concatenation is a fresh, uncompressed value).
    expect(await refreshSearchDocuments(db.prisma, "all")).toBeGreaterThan(0);
    const [size] = await db.prisma.$queryRaw<{ bytes: number; lexemes: number }[]>`
      SELECT pg_column_size("searchVector" || ''::tsvector) AS bytes, length("searchVector") AS lexemes FROM "Run" WHERE id = ${id}::uuid`;
    console.log("huge run document", size);
    expect(size!.lexemes).toBeGreaterThan(10_000);
    expect(size!.bytes).toBeLessThan(1_048_576);
    expect(await ids("code0Zq")).toContain(id);
    expect(await ids("a0k0Zq")).toContain(id); // the first call's arguments
  }, 120_000);

  it("indexes a text too dense for tsvector's 1 MB limit at tighter caps instead of failing", async () => {
    // Distinct words of ten 4-byte characters in every part: ~3.6 bytes of lexemes per character,
    // over 1 MB at the usual caps (tsvector refuses more than 1 MB of lexemes).
    let next = 0;
    const dense = (chars: number) =>
      Array.from({ length: Math.floor(chars / 11) }, () => {
        const i = next++;
        return Array.from({ length: 10 }, (_, k) => String.fromCodePoint(0x20000 + ((i * 7 + k * 7919) % 40000))).join("");
      }).join(" ");
    const first = dense(11);
    const id = await run(`${first} ${dense(60_000)}`, {
      purpose: dense(20_000),
      provenance: { prompt: dense(20_000) },
      result: { text: dense(60_000) },
      execution: { logs: [{ level: "log", text: dense(60_000) }] },
    });
    const reviewer = await db.prisma.user.create({ data: { email: "dense-reviewer@example.com", name: "R", role: "reviewer" } });
    await recordReview(db.prisma, { runId: id, reviewerId: reviewer.id, verdict: "approve", comment: dense(40_000) });
    await db.prisma.runToolCall.createMany({
      data: Array.from({ length: 200 }, (_, i) => ({
        runId: id,
        seq: i + 1,
        server: "ledger",
        tool: "getCustomer",
        argsDigest: sha256(`a${i}`),
        resultDigest: sha256(`r${i}`),
        args: { t: dense(2_000) },
        result: { t: dense(4_000) },
        durationMs: 1,
        outcome: "ok",
      })),
    });
    expect(await refreshSearchDocuments(db.prisma, "all")).toBeGreaterThan(0);
    const [size] = await db.prisma.$queryRaw<{ lexemes: number }[]>`
      SELECT length("searchVector") AS lexemes FROM "Run" WHERE id = ${id}::uuid`;
    console.log("dense run document", size);
    expect(size!.lexemes).toBeGreaterThan(1_000);
    expect(size!.lexemes).toBeLessThan(5_000); // the tighter caps (~33k words at the usual ones)
    expect(await ids(first)).toEqual([id]);
  }, 60_000);
});

describe("agent and person filters match a part, in any case", () => {
  it("matches part of an agent name, an owner's email or name, and escapes wildcards", async () => {
    const all = [refundA, refundB, other];
    const filter = async (filters: { agent?: string; person?: string }) =>
      (await searchRuns(db.prisma, filters, { limit: 200 })).items
        .map((i) => i.id)
        .filter((id) => all.includes(id))
        .sort();
    expect(await filter({ agent: "refunds" })).toEqual(all.sort());
    expect(await filter({ agent: "BILLING-refunds_BOT" })).toEqual(all.sort());
    expect(await filter({ agent: "nobody" })).toEqual([]);
    expect(await filter({ agent: "billing%bot" })).toEqual([]);
    expect(await filter({ agent: "refunds_bot" })).toEqual(all.sort());
    expect(await filter({ agent: "refundsxbot" })).toEqual([]);
    expect(await filter({ person: "dana.owner" })).toEqual(all.sort());
    expect(await filter({ person: "whitfield" })).toEqual(all.sort());
    expect(await filter({ person: "_" })).toEqual([]);
  });
});
