import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { chainHash, GENESIS_HASH } from "./record";
import { filtersFromSearchParams, filtersToSearchParams } from "./filters";
import { searchRuns } from "./search";
import { exportAudited, searchAudited, viewRunTimelineAudited } from "./service";
import { recordReview, seedRun } from "./testing";

let db: TestDatabase;
let refund: Awaited<ReturnType<typeof seedRun>>;
let quarterly: Awaited<ReturnType<typeof seedRun>>;
let old: Awaited<ReturnType<typeof seedRun>>;
const compliance = { type: "user", id: "00000000-0000-4000-8000-000000000001", email: "c@example.com", role: "compliance" } as const;
const reviewer = { type: "user", id: "00000000-0000-4000-8000-000000000002", email: "r@example.com", role: "reviewer" } as const;

beforeAll(async () => {
  db = await createTestDatabase();
  refund = await seedRun(db.prisma, {
    code: "const r = await tools.ledger.refund({ id: 'inv-1' }); return r;",
    purpose: "Refund the duplicate charge",
    capabilitySet: ["ledger.refund"],
    dataClasses: ["financial"],
    status: "failed",
    decision: "escalate",
    agentName: "billing-bot",
    calls: 2,
  });
  quarterly = await seedRun(db.prisma, { purpose: "Quarterly summary", logs: ["wrote the kangaroo report"], agentName: "report-bot", calls: 0 });
  old = await seedRun(db.prisma, { purpose: "Archive sweep", createdAt: new Date("2025-01-15T10:00:00Z"), agentName: "report-bot" });
  for (let i = 0; i < 5; i++) await seedRun(db.prisma, { purpose: `Filler ${i}`, agentName: "filler-bot" });
  // A reviewer's comment becomes searchable on the run through the Review trigger.
  const reviewerUser = await db.prisma.user.create({ data: { email: "reviewer@example.com", name: "R", role: "reviewer" } });
  await recordReview(db.prisma, { runId: refund.runId, reviewerId: reviewerUser.id, verdict: "reject", comment: "Customer flagged as platypus risk" });
  // A release of a withheld result, searched as a review is: its reason, and who gave it. Made
  // after a search built the run's document, so only the release's trigger can make it owed again.
  await searchRuns(db.prisma, { q: "kangaroo" });
  const built = await db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "Run" WHERE id = ${quarterly.runId}::uuid AND "searchVector" IS NOT NULL`;
  expect(built[0]!.n).toBe(1n);
  const releaser = await db.prisma.user.create({ data: { email: "releaser@example.com", name: "Rel Easer", role: "reviewer" } });
  await db.prisma.resultRelease.create({
    data: { runId: quarterly.runId, reviewerId: releaser.id, comment: "Threshold wombat checked by hand", resultDigest: "0".repeat(64) },
  });
});
afterAll(() => db?.drop());

const ids = (page: { items: { id: string }[] }) => page.items.map((i) => i.id);

describe("searchRuns", () => {
  it("finds runs by words in code, purpose, logs and review comments", async () => {
    expect(ids(await searchRuns(db.prisma, { q: "refund" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { q: "duplicate charge" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { q: "kangaroo" }))).toEqual([quarterly.runId]);
    expect(ids(await searchRuns(db.prisma, { q: "platypus" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { q: "wombat" }))).toEqual([quarterly.runId]);
    expect(ids(await searchRuns(db.prisma, { q: "nothing-like-this" }))).toEqual([]);
  });

  it("filters by agent, person, status, decision, data class, tool, code hash and time", async () => {
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: refund.runId } });
    expect(ids(await searchRuns(db.prisma, { agent: "billing-bot" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { person: refund.ownerEmail }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { person: "REVIEWER@example.com" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { person: "releaser" }))).toEqual([quarterly.runId]);
    expect(ids(await searchRuns(db.prisma, { person: "Rel Easer" }))).toEqual([quarterly.runId]);
    expect(ids(await searchRuns(db.prisma, { status: "failed" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { decision: "escalate" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { dataClass: "financial" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { tool: "ledger.refund" }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { codeHash: run.codeSha256 }))).toEqual([refund.runId]);
    expect(ids(await searchRuns(db.prisma, { until: new Date("2025-02-01T00:00:00Z") }))).toEqual([old.runId]);
    expect(ids(await searchRuns(db.prisma, { agent: "report-bot", since: new Date("2026-01-01T00:00:00Z") }))).toEqual([quarterly.runId]);
  });

  it("pages with a keyset cursor, newest first, without repeats", async () => {
    const all = ids(await searchRuns(db.prisma, {}, { limit: 100 }));
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page = await searchRuns(db.prisma, {}, { limit: 3, after });
      seen.push(...ids(page));
      after = page.nextCursor;
    } while (after);
    expect(seen).toEqual(all);
    expect(all).toHaveLength(8);
    await expect(searchRuns(db.prisma, {}, { after: "garbage" })).rejects.toThrow(/cursor/);
  });

  it("parses the URL strictly and round-trips it", () => {
    const parsed = filtersFromSearchParams(new URLSearchParams("q=refund&status=failed&since=2026-11-01&after=x"), ["after"]);
    expect(parsed).toEqual({ ok: true, filters: { q: "refund", status: "failed", since: new Date("2026-11-01T00:00:00Z") } });
    if (parsed.ok) expect(filtersToSearchParams(parsed.filters).toString()).toBe("q=refund&status=failed&since=2026-11-01T00%3A00%3A00.000Z");
    expect(filtersFromSearchParams(new URLSearchParams("status=exploded")).ok).toBe(false);
    expect(filtersFromSearchParams(new URLSearchParams("codeHash=abc")).ok).toBe(false);
    expect(filtersFromSearchParams(new URLSearchParams("sort=id")).ok).toBe(false);
  });

  it("refuses a day that does not exist, one before 1970 (PostgreSQL refused year 0 with a 500), and a parameter given twice", () => {
    for (const since of ["2026-02-30", "2026-02-30T10:00Z", "0000-01-01", "1969-12-31T23:59Z"]) {
      expect(filtersFromSearchParams(new URLSearchParams({ since }))).toEqual({ ok: false, error: expect.stringMatching(/^since: must be/) });
    }
    expect(filtersFromSearchParams(new URLSearchParams("status=succeeded&status=failed"))).toEqual({
      ok: false,
      error: "status: given more than once; give it once",
    });
    expect(filtersFromSearchParams(new URLSearchParams("format=csv&format=jsonl"), ["format"])).toMatchObject({ ok: false });
    expect(filtersFromSearchParams({ status: ["succeeded", "failed"] })).toMatchObject({ ok: false });
    expect(filtersFromSearchParams(new URLSearchParams("since=1970-01-01&until=2026-02-28T23:59Z")).ok).toBe(true);
  });
});

describe("audited reads", () => {
  it("a search is recorded as audit.searched, with its filters", async () => {
    await searchAudited(db.prisma, compliance, { q: "refund" });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.searched" }, orderBy: { id: "desc" } });
    expect(event).toMatchObject({ actorType: "user", actorId: compliance.id });
    expect(event.data).toMatchObject({ filters: { q: "refund" }, results: 1 });
  });

  it("viewing a timeline is recorded as audit.viewed", async () => {
    const timeline = await viewRunTimelineAudited(db.prisma, compliance, refund.runId);
    expect(timeline.toolCalls).toHaveLength(2);
    expect(timeline.reviews[0]?.comment).toMatch(/platypus/);
    expect(timeline.events.map((e) => e.action)).toEqual(["run.submitted", "run.failed", "run.reviewed"]);
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.viewed" }, orderBy: { id: "desc" } });
    expect(event).toMatchObject({ subjectType: "run", subjectId: refund.runId });
  });

  it("refuses roles without the scope, and records nothing for them", async () => {
    const before = await db.prisma.auditEvent.count();
    await expect(searchAudited(db.prisma, reviewer, {})).rejects.toThrow(/audit:read/);
    await expect(exportAudited(db.prisma, reviewer, {}, "jsonl")).rejects.toThrow(/audit:export/);
    expect(await db.prisma.auditEvent.count()).toBe(before);
  });
});

async function collect(rows: AsyncGenerator<string>): Promise<string> {
  let text = "";
  for await (const chunk of rows) text += chunk;
  return text;
}

describe("export", () => {
  it("JSONL: the manifest first, then every event up to the head, re-verifiable as a chain", async () => {
    const { manifest, rows } = await exportAudited(db.prisma, compliance, {}, "jsonl", { batchSize: 7 });
    const lines = (await collect(rows))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0].manifest).toEqual(manifest);
    const events = lines.slice(1);
    expect(events).toHaveLength(manifest.rowCount);
    expect(manifest.chainHead?.id).toBe(events.at(-1).id);
    expect(manifest.timeRange.from).toBe(events[0].at);
    let prev = GENESIS_HASH;
    for (const event of events) {
      expect(event.prevHash).toBe(prev);
      expect(chainHash(prev, { ...event, at: new Date(event.at) })).toBe(event.hash);
      prev = event.hash;
    }
    const recorded = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.exported" }, orderBy: { id: "desc" } });
    expect(recorded.data).toMatchObject({ format: "jsonl", rowCount: manifest.rowCount, chainHead: manifest.chainHead });
  });

  it("honours the filters: only the events of matching runs", async () => {
    const { manifest, rows } = await exportAudited(db.prisma, compliance, { q: "refund" }, "jsonl");
    const events = (await collect(rows))
      .trimEnd()
      .split("\n")
      .slice(1)
      .map((line) => JSON.parse(line));
    expect(manifest.scope).toBe("events of matching runs");
    expect(new Set(events.map((e) => e.subjectId))).toEqual(new Set([refund.runId]));
    expect(events).toHaveLength(manifest.rowCount);
    expect(manifest.filters).toEqual({ q: "refund" });
  });

  it("CSV: a header, one quoted line per event, formula-looking cells defused", async () => {
    await db.prisma.$transaction((tx) =>
      import("./record").then(({ recordAudit }) =>
        recordAudit(tx, {
          actor: { type: "system", name: '=HYPERLINK("x")' },
          action: "test.csv",
          subject: { type: "thing", id: 'a,"b"' },
          data: { note: "line\nbreak" },
        }),
      ),
    );
    const { manifest, rows } = await exportAudited(db.prisma, compliance, {}, "csv");
    const text = await collect(rows);
    expect(
      text.startsWith(
        "id,at (UTC),actorType,actorId,actorName,actorEmail,action,subjectType,subjectId,subjectName,purpose,code,result,error,toolCalls,data,prevHash,hash\r\n",
      ),
    ).toBe(true);
    const last = text.trimEnd().split("\r\n").at(-1)!;
    expect(last).toContain(`"'=HYPERLINK(""x"")"`);
    expect(last).toContain(`"a,""b"""`);
    expect(last).toContain(`"{""note"": ""line\\nbreak""}"`);
    expect(text.trimEnd().split("\r\n")).toHaveLength(manifest.rowCount + 1);
  });
});
