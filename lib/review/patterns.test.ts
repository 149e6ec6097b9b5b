/**
 * Patterns on real parts: runs submitted through intake (the demo ledger, PostgreSQL) are grouped
 * by structure; the literals that vary are named; older runs without a fingerprint are
 * fingerprinted when patterns are listed; review time orders the groups; only admins and
 * reviewers may list them, and every listing is audited.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshSearchDocuments } from "@/lib/audit/search-refresh";
import { runCli } from "@/lib/cli/main";
import { setEnvForChildren } from "@/lib/env";
import { submitRun } from "@/lib/intake/submit";
import { getRun } from "@/lib/runs/service";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { groupsQuery, listPatterns } from "./patterns";
import { recordReview } from "@/lib/audit/testing";

let ledger: LedgerRuntime;
const admin = { type: "user", id: "00000000-0000-4000-8000-00000000000a", email: "owner@example.com", role: "admin" } as const;

const countOf = (status: string, limit: number) => `const page = await tools.ledger.listInvoices({ status: "${status}", limit: ${limit} });
return page.invoices.length;`;

beforeAll(async () => {
  ledger = await startLedgerRuntime("patterns-bot");
  for (const [status, limit] of [
    ["open", 5],
    ["paid", 10],
    ["overdue", 20],
  ] as const) {
    const view = await submitRun(ledger.runtime, ledger.agent, { code: countOf(status, limit), purpose: `count ${status}`, language: "javascript" });
    await getRun(ledger.runtime, ledger.agent, { runId: view.runId, waitSeconds: 30 });
  }
  const other = await submitRun(ledger.runtime, ledger.agent, { code: "return 1 + 1;", purpose: "other", language: "javascript" });
  // Settled, so that no run is still being written when a test reads or plans over the runs.
  await getRun(ledger.runtime, ledger.agent, { runId: other.runId, waitSeconds: 30 });
}, 120_000);
afterAll(() => ledger?.close());

describe("listPatterns", () => {
  it("groups three runs of one script with other literals into one pattern, naming what varies", async () => {
    const { patterns } = await listPatterns(ledger.db.prisma, admin);
    const counting = patterns.find((p) => p.count === 3);
    expect(counting).toMatchObject({ successRate: 1, agents: ["patterns-bot"], reviewSeconds: 0 });
    expect(counting!.holes).toEqual([
      { index: 0, type: "string", distinct: 3, values: ["open", "overdue", "paid"] },
      { index: 1, type: "number", distinct: 3, values: ["10", "20", "5"] },
    ]);
    expect(counting!.exampleRunIds).toHaveLength(3);
    // The other script ran once: not a pattern of two or more.
    expect(patterns.some((p) => p.count === 1)).toBe(false);
    expect((await listPatterns(ledger.db.prisma, admin, { minRuns: 1 })).patterns.some((p) => p.count === 1)).toBe(true);
  });

  it("fingerprints runs stored before fingerprints existed, and orders patterns by the review time they cost", async () => {
    const agentId = ledger.agent.id;
    const reviewer = await ledger.db.prisma.user.create({ data: { email: "rita@example.com", name: "Rita", role: "reviewer" } });
    const old = (i: number, submitted: Date) => ({
      agentId,
      status: "succeeded" as const,
      language: "javascript" as const,
      code: `return await tools.ledger.listRefunds({ limit: ${i} });`,
      codeSha256: `old-${i}`,
      purpose: "old refunds",
      capabilitySet: ["ledger.listRefunds"],
      inputsDigest: "none",
      requestDigest: `old-${i}`,
      createdAt: submitted,
    });
    const submitted = new Date(Date.now() - 3_600_000);
    const runs = [];
    for (const i of [1, 2]) runs.push(await ledger.db.prisma.run.create({ data: old(i, submitted) }));
    // The first waited 10 minutes for its verdict.
    await recordReview(ledger.db.prisma, {
      runId: runs[0]!.id,
      reviewerId: reviewer.id,
      verdict: "approve",
      createdAt: new Date(submitted.getTime() + 600_000),
    });

    const listed = await listPatterns(ledger.db.prisma, admin);
    expect(listed.backfilled).toBe(2);
    expect(listed.patterns[0]).toMatchObject({ count: 2, reviewSeconds: 600, holes: [{ index: 0, type: "number", distinct: 2, values: ["1", "2"] }] });
    expect((await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runs[1]!.id } })).fingerprint).toBe(listed.patterns[0]!.fingerprint);
  });

  it("is for admins and reviewers only, and every listing is audited", async () => {
    const compliance = { type: "user", id: "00000000-0000-4000-8000-00000000000c", email: "c@example.com", role: "compliance" } as const;
    await expect(listPatterns(ledger.db.prisma, compliance)).rejects.toMatchObject({ code: "forbidden", details: { scope: "patterns:read" } });
    await expect(listPatterns(ledger.db.prisma, ledger.agent)).rejects.toMatchObject({ code: "forbidden" });
    const events = await ledger.db.prisma.auditEvent.findMany({ where: { action: "patterns.listed" } });
    expect(events.length).toBeGreaterThanOrEqual(3);
    expect(events.every((e) => e.actorId === admin.id)).toBe(true);
  });
});

describe("airlock skills patterns", () => {
  const capture = () => {
    const io = { out: "", err: "", stdout: (t: string) => void (io.out += t), stderr: (t: string) => void (io.err += t), readStdin: async () => "" };
    return io;
  };

  it("--json prints the patterns with the documented fields; the text lists one line each", async () => {
    setEnvForChildren({ DATABASE_URL: ledger.db.url });
    const io = capture();
    expect(await runCli(["skills", "patterns", "--json"], io)).toBe(0);
    const { patterns } = JSON.parse(io.out) as { patterns: Record<string, unknown>[] };
    expect(patterns.length).toBeGreaterThanOrEqual(2);
    for (const pattern of patterns) {
      expect(Object.keys(pattern).sort()).toEqual([
        "agents",
        "count",
        "exampleRunIds",
        "fingerprint",
        "firstAt",
        "holes",
        "lastAt",
        "reviewSeconds",
        "successRate",
      ]);
    }
    const text = capture();
    expect(await runCli(["skills", "patterns"], text)).toBe(0);
    expect(text.out.trim().split("\n")).toHaveLength(patterns.length);
    expect(text.out).toContain('#1="open"|"overdue"|"paid" #2="10"|"20"|"5"');
  });

  it("refuses a bad --min with usage and exit 2", async () => {
    const io = capture();
    expect(await runCli(["skills", "patterns", "--min", "0"], io)).toBe(2);
    expect(io.err).toMatch(/^airlock: --min must be a whole number from 1 to 1000000 \(got "0"\)\nUsage: airlock skills patterns /);
  });
});

describe("the grouping's plan", () => {
  it("counts the runs from Run_patterns_idx alone (an index-only scan), and reads other runs only by key", async () => {
    // With sequential and bitmap scans priced out, as on a table of many runs, the planner may read
    // the index alone only if it covers every column the counts use; one added without it fails this.
    // The planner's choices follow the statistics and the pages VACUUM marked all-visible: every run
    // has settled (beforeAll) and its search document is built first, so no write to a run follows
    // the VACUUM, and "Review" is analyzed too, so the few reviewed runs are probed by key.
    await refreshSearchDocuments(ledger.db.prisma, "all");
    await ledger.db.prisma.$executeRawUnsafe(`VACUUM ANALYZE "Run", "Review"`);
    const lines = await ledger.db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL enable_seqscan = off`;
      await tx.$executeRaw`SET LOCAL enable_bitmapscan = off`;
      const rows = await tx.$queryRaw<{ "QUERY PLAN": string }[]>`EXPLAIN ${groupsQuery(2)}`;
      return rows.map((row) => row["QUERY PLAN"]);
    });
    const runScans = lines
      .filter((line) => / on "Run"/.test(line))
      .map((line) =>
        line
          .trim()
          .replace(/^->\s+/, "")
          .replace(/\s+\(cost.*$/, ""),
      );
    expect(runScans).toContain('Index Only Scan using "Run_patterns_idx" on "Run" r');
    expect(runScans).toContain('Index Scan Backward using "Run_fingerprint_createdAt_idx" on "Run" x'); // three examples per group shown
    // Nothing else reads run rows but the reviewed runs by their id.
    for (const scan of runScans) {
      expect(scan).toMatch(
        /^(Index Only Scan using "Run_patterns_idx"|Index Scan Backward using "Run_fingerprint_createdAt_idx"|Index Scan using "Run_pkey") on "Run" \w+$/,
      );
    }
  });
});
