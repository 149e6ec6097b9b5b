/**
 * Retention on a real PostgreSQL, the job running as the unprivileged app role: expired payloads
 * are purged through airlock_purge() only, audited, dropped from search, and `audit verify` still
 * passes; legal holds stop it; the app role cannot open the door itself; a purge without its event
 * is named by verify.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { runCli } from "@/lib/cli/main";
import { auditCommand } from "@/lib/cli/audit";
import type { CliIo } from "@/lib/cli/io";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import { ensureAppRole, grantAppPrivileges, withCredentials } from "@/lib/db/roles";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { withAdminClient } from "@/lib/testing/database-url";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { withPurgeNotices } from "@/lib/review/run-sections";
import { loadRunArtifacts, readArtifact } from "@/lib/runs/artifacts";
import { activeHolds, placeHold, releaseHold } from "./holds";
import { runTimeline } from "./presenter";
import { recordAudit } from "./record";
import { RETENTION_ACTOR, purgeExpired } from "./retention";
import { DAY_MS, RETENTION_DEFAULT_DAYS } from "./retention-windows";
import { SUBMITTED_CONTENT, TRANSITION_CONTENT, storedContentDigests } from "./run-content";
import { toolCallsDigest } from "./seal";
import { insertToolCalls, storedJson } from "./stored-calls";
import { SYSTEM, tamper } from "./testing";
import { refreshSearchDocuments } from "./search-refresh";
import { verifyAuditChain } from "./verify";

const days = { ...RETENTION_DEFAULT_DAYS };
const compliance = { type: "user", id: "00000000-0000-4000-8000-000000000001", email: "cora@example.com", role: "compliance" } as const;
const role = `airlock_app_${randomBytes(4).toString("hex")}`;
const { adminUrl } = inject("airlockDatabase");
let db: TestDatabase;
/** The app role's connection: what the web processes and the worker use. */
let app: PrismaClient;
let agentId: string;
let heldAgentId: string;

type Seeded = { id: string; word: string };

/** An artifact blob holding `text` (once per text); its sha256. */
async function blob(text: string): Promise<string> {
  const bytes = Buffer.from(text);
  const sha256 = sha256Hex(bytes);
  await db.prisma.artifactBlob.upsert({ where: { sha256 }, update: {}, create: { sha256, sizeBytes: bytes.length, bytes } });
  blobs[text] = sha256;
  return sha256;
}

/** A run that ended `endedDaysAgo` days ago, its events carrying content digests and the tool-call seal, as the executor writes them. */
async function seed(options: { classes: string[]; endedDaysAgo: number; calls?: { tool: string }[]; agent?: string; artifact?: string }): Promise<Seeded> {
  const word = `w${randomBytes(5).toString("hex")}`;
  const artifacts = options.artifact
    ? [{ name: "report.txt", sizeBytes: Buffer.byteLength(options.artifact), sha256: await blob(options.artifact), mediaType: "text/plain" }]
    : [];
  const ended = new Date(Date.now() - options.endedDaysAgo * DAY_MS);
  const code = `return "${word}code";`;
  const run = await db.prisma.run.create({
    data: {
      agentId: options.agent ?? agentId,
      status: "succeeded",
      language: "javascript",
      code,
      codeSha256: sha256Hex(code),
      purpose: `${word}purpose for the test`,
      provenance: { model: "m", conversationId: "c", prompt: `${word}prompt please`, context: `${word}context` },
      inputsDigest: jsonDigest([]),
      requestDigest: word,
      decision: "allow",
      facts: { effect: "read_only", openWorld: false, dataClasses: options.classes, toolCount: 1 },
      javascript: code,
      result: { answer: `${word}result` },
      execution: {
        wallMs: 1,
        cpuMs: 1,
        peakRssMb: 1,
        toolCalls: 0,
        logs: [{ level: "log", text: `${word}log line` }],
        flags: [],
        truncated: false,
        artifacts,
      },
      createdAt: new Date(ended.getTime() - 60_000),
      finishedAt: ended,
    },
  });
  const calls = (options.calls ?? []).map((call, i) => ({
    seq: i + 1,
    server: "ledger",
    tool: call.tool,
    readOnly: true,
    phase: "apply" as const,
    args: storedJson({ id: `${word}-${i}` }),
    result: storedJson({ name: `${word}secret` }),
    durationMs: 1,
    outcome: "ok" as const,
    error: null,
  }));
  const sealed = calls.map((c) => ({ ...c, argsDigest: c.args.digest, resultDigest: c.result.digest }));
  await db.prisma.$transaction(async (tx) => {
    const subject = { type: "run", id: run.id };
    await recordAudit(tx, {
      actor: SYSTEM,
      action: "run.submitted",
      subject,
      data: { contentDigests: await storedContentDigests(tx, run.id, SUBMITTED_CONTENT) },
    });
    if (calls.length) await insertToolCalls(tx, run.id, calls);
    for (const artifact of artifacts) await tx.runArtifact.create({ data: { ...artifact, runId: run.id } });
    await recordAudit(tx, {
      actor: SYSTEM,
      action: "run.succeeded",
      subject,
      data: { toolCalls: calls.length, toolCallsDigest: toolCallsDigest(sealed), contentDigests: await storedContentDigests(tx, run.id, TRANSITION_CONTENT) },
    });
  });
  return { id: run.id, word };
}

const row = (id: string) => db.prisma.run.findUniqueOrThrow({ where: { id }, include: { toolCalls: { orderBy: { seq: "asc" } } } });

async function matches(id: string, word: string): Promise<boolean> {
  await refreshSearchDocuments(db.prisma, "all");
  const [hit] = await db.prisma.$queryRaw<{ hit: boolean }[]>`
    SELECT coalesce("searchVector" @@ websearch_to_tsquery('english', ${word}), false) AS hit FROM "Run" WHERE id = ${id}::uuid`;
  return hit!.hit;
}

const verify = () => verifyAuditChain(db.prisma, { checkpoints: null });

let shortExpired: Seeded;
let allExpired: Seeded;
let heldRun: Seeded;
let heldByAgent: Seeded;
let financial: Seeded;
let recent: Seeded;
const blobs: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  const password = randomBytes(12).toString("hex");
  await ensureAppRole(adminUrl, role, password);
  await grantAppPrivileges(db.url, role);
  app = createPrismaClient(withCredentials(db.url, role, password));

  await db.prisma.user.create({ data: { id: compliance.id, email: compliance.email, name: "Cora", role: "compliance" } });
  const owner = await db.prisma.user.create({ data: { email: "owner@example.com", name: "Owner", role: "admin" } });
  agentId = (await db.prisma.agent.create({ data: { name: "keeper", ownerId: owner.id } })).id;
  heldAgentId = (await db.prisma.agent.create({ data: { name: "litigated", ownerId: owner.id } })).id;
  const server = await db.prisma.upstreamServer.create({ data: { name: "ledger", transport: "stdio", endpoint: {}, dataClass: "internal" } });
  for (const [name, dataClass] of [
    ["getCustomer", "pii"],
    ["listInvoices", null],
  ] as const) {
    await db.prisma.upstreamTool.create({
      data: { serverId: server.id, name, description: name, inputSchema: {}, schemaHash: name, pinnedHash: name, dataClass },
    });
  }

  const calls = [{ tool: "getCustomer" }, { tool: "listInvoices" }];
  // Artifact blobs: one shared by a run past its window and one inside it, one of an expired run alone.
  shortExpired = await seed({ classes: ["pii", "internal"], endedDaysAgo: 40, calls, artifact: "shared report" });
  allExpired = await seed({ classes: ["pii", "internal"], endedDaysAgo: 100, calls, artifact: "old report" });
  heldRun = await seed({ classes: ["pii"], endedDaysAgo: 40, calls: [{ tool: "getCustomer" }] });
  heldByAgent = await seed({ classes: ["pii"], endedDaysAgo: 40, agent: heldAgentId });
  financial = await seed({ classes: ["financial"], endedDaysAgo: 40, calls: [{ tool: "listInvoices" }] });
  recent = await seed({ classes: ["pii"], endedDaysAgo: 10, calls: [{ tool: "getCustomer" }], artifact: "shared report" });
});

afterAll(async () => {
  await app?.$disconnect();
  await db?.prisma.$executeRawUnsafe(`DROP OWNED BY "${role}"`).catch(() => {});
  await db?.drop();
  await withAdminClient(adminUrl, (client) => client.query(`DROP ROLE IF EXISTS "${role}"`)).catch(() => {});
});

describe("legal holds", () => {
  it("compliance places a hold on a run and on an agent, audited; others may not", async () => {
    const onRun = await app.$transaction((tx) => placeHold(tx, compliance, { runId: heldRun.id, reason: "litigation 42" }));
    await app.$transaction((tx) => placeHold(tx, compliance, { agentName: "litigated", reason: "regulator inquiry" }));
    expect(await activeHolds(app, heldRun.id)).toMatchObject([{ id: onRun.holdId, on: "run", reason: "litigation 42", placedBy: compliance.email }]);
    expect(await activeHolds(app, heldByAgent.id)).toMatchObject([{ on: "agent", reason: "regulator inquiry" }]);
    const placed = await db.prisma.auditEvent.findMany({ where: { action: "hold.placed" }, orderBy: { id: "asc" } });
    expect(placed.map((e) => [e.subjectType, e.subjectId, e.actorId])).toEqual([
      ["run", heldRun.id, compliance.id],
      ["agent", heldAgentId, compliance.id],
    ]);
    const reviewer = { type: "user", id: compliance.id, email: "rex@example.com", role: "reviewer" } as const;
    await expect(app.$transaction((tx) => placeHold(tx, reviewer, { runId: heldRun.id, reason: "mine" }))).rejects.toMatchObject({ code: "forbidden" });
    await expect(app.$transaction((tx) => placeHold(tx, compliance, { runId: heldRun.id, reason: "  " }))).rejects.toMatchObject({ code: "bad_request" });
    await expect(app.$transaction((tx) => placeHold(tx, compliance, { agentName: "nobody", reason: "x" }))).rejects.toMatchObject({ code: "not_found" });
    // The run page's "hold its agent" names the agent by a run: an unknown run is not found, not an internal error.
    await expect(
      app.$transaction((tx) => placeHold(tx, compliance, { agentOfRunId: "00000000-0000-4000-8000-000000000000", reason: "x" })),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("the app role can neither delete a hold nor rewrite it", async () => {
    await expect(app.$executeRawUnsafe(`DELETE FROM "LegalHold"`)).rejects.toThrow(/permission denied/);
    await expect(app.$executeRawUnsafe(`UPDATE "LegalHold" SET reason = 'nothing'`)).rejects.toThrow(/never deleted or changed/);
    await expect(app.$executeRawUnsafe(`UPDATE "LegalHold" SET "releasedAt" = now()`)).rejects.toThrow(/never deleted or changed/);
  });

  it("the app role cannot place or release a hold without its event, nor move a run out from under an agent's hold", async () => {
    const [hold] = await activeHolds(app, heldByAgent.id);
    // A release the trigger's shape allows is refused at commit: no hold.released event in its transaction.
    await expect(
      app.$executeRawUnsafe(`UPDATE "LegalHold" SET "releasedAt" = now(), "releasedBy" = 'cora@example.com', "releaseReason" = 'x' WHERE id = '${hold!.id}'`),
    ).rejects.toThrow(/without its hold.released event/);
    await expect(
      app.$executeRawUnsafe(`INSERT INTO "LegalHold" (id, "runId", reason, "placedBy") VALUES (gen_random_uuid(), '${recent.id}', 'x', 'y')`),
    ).rejects.toThrow(/without its hold.placed event/);
    // A run's agent, and an ended run's end and status, never change: the hold and the window stand.
    for (const sql of [
      `UPDATE "Run" SET "agentId" = '${agentId}' WHERE id = '${heldByAgent.id}'`,
      `UPDATE "Run" SET "finishedAt" = '2000-01-01' WHERE id = '${recent.id}'`,
      `UPDATE "Run" SET status = 'queued' WHERE id = '${recent.id}'`,
      `UPDATE "Run" SET "updatedAt" = '2000-01-01' WHERE id = '${recent.id}'`,
    ]) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(/write-once: (agentId|finishedAt|status|updatedAt) of run/);
    }
    expect(await activeHolds(app, heldByAgent.id)).toHaveLength(1);
  });
});

describe("the retention job", () => {
  it("purges what is past its window, keeps what is held or still inside it, and audits each run", async () => {
    expect(await matches(shortExpired.id, `${shortExpired.word}result`)).toBe(true);
    const summary = await purgeExpired(app, { asOf: new Date(), days });
    expect(summary).toMatchObject({ runsPurged: 2, runsHeld: 2, toolCallsPurged: 3 });

    // pii + internal, ended 40 days ago: the shortest window (pii, 30) is over, the longest (internal, 90) is not.
    const short = await row(shortExpired.id);
    expect(short.result).toBeNull();
    expect(short.provenance).toEqual({ model: "m", conversationId: "c" });
    expect(short.execution).toMatchObject({ logs: [], wallMs: 1 });
    expect(short.code).toBe(`return "${shortExpired.word}code";`);
    expect(short.purpose).toContain(shortExpired.word);
    expect(short.javascript).not.toBeNull();
    expect(short.purgedAt).toBeInstanceOf(Date);
    expect(Object.keys(short.purged as object).sort()).toEqual(["artifacts", "execution", "provenance", "result"]);
    // The pii tool's call is purged, the internal one's is not; digests stay.
    expect(short.toolCalls.map((c) => [c.args === null, c.result === null, c.purgedAt !== null])).toEqual([
      [true, true, true],
      [false, false, false],
    ]);
    expect(short.toolCalls[0]!.argsDigest).toMatch(/^[0-9a-f]{64}$/);

    // Ended 100 days ago: past the longest too, so code, purpose and every call are gone.
    const all = await row(allExpired.id);
    expect([all.code, all.purpose, all.javascript, all.result]).toEqual(["", "", null, null]);
    expect(all.toolCalls.every((c) => c.args === null && c.result === null && c.purgedAt)).toBe(true);

    // A blob goes when every run linking it has had its artifacts purged.
    const blob = (text: string) => db.prisma.artifactBlob.findUniqueOrThrow({ where: { sha256: blobs[text]! } });
    expect(await blob("old report")).toMatchObject({ bytes: null, purgedAt: expect.any(Date) });
    expect(await blob("shared report")).toMatchObject({ purgedAt: null });
    expect(Buffer.from((await blob("shared report")).bytes!).toString()).toBe("shared report");

    for (const kept of [heldRun, heldByAgent, financial, recent]) {
      const r = await row(kept.id);
      expect([r.purgedAt, r.result], kept.word).toEqual([null, { answer: `${kept.word}result` }]);
      expect(r.toolCalls.every((c) => c.purgedAt === null)).toBe(true);
    }

    const events = await db.prisma.auditEvent.findMany({ where: { action: "run.purged" }, orderBy: { id: "asc" } });
    expect(new Set(events.map((e) => e.subjectId))).toEqual(new Set([shortExpired.id, allExpired.id]));
    const shortEvent = events.find((e) => e.subjectId === shortExpired.id)!;
    expect(shortEvent).toMatchObject({ actorType: RETENTION_ACTOR.type, actorId: "retention" });
    expect(shortEvent.data).toMatchObject({
      fields: ["result", "execution", "provenance", "artifacts"],
      purgedToolCalls: [1],
      classes: ["internal", "pii"],
      windows: { shortestDays: 30, longestDays: 90, appliedDays: 30 },
      asOf: summary.asOf,
      contentDigests: { result: jsonDigest(null) },
    });
  });

  it("a run whose artifacts were purged cannot be read through a blob another run still holds", async () => {
    // shortExpired and recent wrote the same bytes: the blob lives on for recent, not for shortExpired.
    const reader = { type: "user", id: "00000000-0000-4000-8000-000000000002", email: "rita@example.com", role: "reviewer" } as const;
    const purged = readArtifact(app, reader, { runId: shortExpired.id, name: "report.txt", via: "download" });
    await expect(purged).rejects.toMatchObject({ code: "gone" });
    await expect(purged).rejects.toThrow(`purged on ${new Date().toISOString().slice(0, 10)} by retention`);
    expect((await loadRunArtifacts(app, shortExpired.id))[0]).toMatchObject({ bytes: null, purgedAt: expect.any(Date) });
    expect((await readArtifact(app, reader, { runId: recent.id, name: "report.txt", via: "download" })).bytes.toString()).toBe("shared report");
  });

  it("readers show 'purged on DATE by retention' instead of the purged content", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const notice = `purged on ${today} by retention`;
    const short = withPurgeNotices(await row(shortExpired.id));
    expect([short.result, short.provenance, (short.execution as { logs: unknown }).logs]).toEqual([
      notice,
      { model: "m", conversationId: "c", prompt: notice },
      [{ level: "log", text: notice }],
    ]);
    expect(short.code).toBe(`return "${shortExpired.word}code";`);
    expect(short.toolCalls.map((c) => c.args)).toEqual([notice, { id: `${shortExpired.word}-1` }]);
    const all = withPurgeNotices(await row(allExpired.id));
    expect([all.code, all.purpose]).toEqual([`// ${notice}`, notice]);
    expect((await runTimeline(db.prisma, allExpired.id))?.run).toMatchObject({ code: `// ${notice}`, purpose: notice });
  });

  it("the search document no longer holds purged words", async () => {
    expect(await matches(shortExpired.id, `${shortExpired.word}result`)).toBe(false);
    expect(await matches(shortExpired.id, `${shortExpired.word}log`)).toBe(false);
    expect(await matches(shortExpired.id, `${shortExpired.word}code`)).toBe(true);
    expect(await matches(allExpired.id, `${allExpired.word}code`)).toBe(false);
    expect(await matches(allExpired.id, `${allExpired.word}purpose`)).toBe(false);
    expect(await matches(recent.id, `${recent.word}result`)).toBe(true);
  });

  it("audit verify still passes after the purge, and running the job again purges nothing twice", async () => {
    expect(await verify()).toMatchObject({ ok: true, broken: null });
    expect(await purgeExpired(app, { asOf: new Date(), days })).toMatchObject({ runsPurged: 0, runsHeld: 2 });
  });

  it("a released hold lets the next run of the job purge; the release is audited", async () => {
    const [hold] = await activeHolds(app, heldRun.id);
    await app.$transaction((tx) => releaseHold(tx, compliance, { holdId: hold!.id, reason: "case closed" }));
    await expect(app.$transaction((tx) => releaseHold(tx, compliance, { holdId: hold!.id, reason: "again" }))).rejects.toMatchObject({ code: "conflict" });
    expect(await db.prisma.legalHold.findUniqueOrThrow({ where: { id: hold!.id } })).toMatchObject({
      releasedBy: compliance.email,
      releaseReason: "case closed",
    });
    expect(await db.prisma.auditEvent.count({ where: { action: "hold.released", subjectId: heldRun.id } })).toBe(1);
    expect(await purgeExpired(app, { asOf: new Date(), days })).toMatchObject({ runsPurged: 1, runsHeld: 1 });
    expect((await row(heldRun.id)).result).toBeNull();
    expect((await verify()).ok).toBe(true);
  });

  it("refuses an instant in the future", async () => {
    await expect(purgeExpired(app, { asOf: new Date(Date.now() + DAY_MS), days })).rejects.toMatchObject({ code: "bad_request" });
  });
});

describe("the purge door", () => {
  it("the app role cannot NULL content or tool-call payloads directly, nor with the door's setting faked", async () => {
    const fake = `SELECT set_config('airlock.purge_door', 'open', true)`;
    const attacks = [
      `UPDATE "Run" SET result = NULL, "purgedAt" = now() WHERE id = '${financial.id}'`,
      `UPDATE "Run" SET code = '', purged = '{"code": "2026-01-01"}' WHERE id = '${financial.id}'`,
      `UPDATE "Run" SET purged = '{"result": "2026-01-01"}' WHERE id = '${financial.id}'`,
      `UPDATE "RunToolCall" SET args = NULL, result = NULL, "purgedAt" = now() WHERE "runId" = '${financial.id}'`,
    ];
    for (const sql of attacks) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(/write-once|append-only/);
      await expect(app.$transaction([app.$queryRawUnsafe(fake), app.$executeRawUnsafe(sql)]), `faked: ${sql}`).rejects.toThrow(/write-once|append-only/);
    }
    // The setting alone is not the door: the check is that the statement runs as the function's owner.
    await expect(app.$transaction([app.$executeRawUnsafe(`SET LOCAL airlock.purge_door = 'open'`), app.$executeRawUnsafe(attacks[0]!)])).rejects.toThrow(
      /write-once/,
    );
    // Nor can a run be inserted already marked purged.
    await expect(
      app.$executeRawUnsafe(
        `INSERT INTO "Run" (id, "agentId", language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", "updatedAt", "purgedAt")
         VALUES (gen_random_uuid(), '${agentId}', 'javascript', 'x', 'x', 'x', 'x', 'x', now(), now())`,
      ),
    ).rejects.toThrow(/inserted unpurged/);
    expect((await row(financial.id)).result).toEqual({ answer: `${financial.word}result` });
  });

  it("a purge through the door with no run.purged event in its transaction is refused at commit: nothing is deleted unaudited", async () => {
    const door = (fields: string, calls: string) => app.$queryRawUnsafe(`SELECT "airlock_purge"('${financial.id}'::uuid, ${fields}, ${calls}, now(), 1)`);
    await expect(door(`ARRAY['result']`, `ARRAY[]::integer[]`)).rejects.toThrow(/\["result"\] purged without a run.purged event/);
    await expect(door(`ARRAY[]::text[]`, `ARRAY[1]`)).rejects.toThrow(/tool call 1 purged without a run.purged event/);
    // An event that names other fields does not cover these.
    await expect(
      app.$transaction(async (tx) => {
        await recordAudit(tx, {
          actor: SYSTEM,
          action: "run.purged",
          subject: { type: "run", id: financial.id },
          data: { fields: ["plan"], purgedToolCalls: [] },
        });
        await tx.$queryRawUnsafe(`SELECT "airlock_purge"('${financial.id}'::uuid, ARRAY['result', 'artifacts'], ARRAY[]::integer[], now(), 1)`);
      }),
    ).rejects.toThrow(/purged without a run.purged event/);
    const kept = await row(financial.id);
    expect([kept.result, kept.purgedAt, kept.toolCalls[0]!.args]).toEqual([{ answer: `${financial.word}result` }, null, { id: `${financial.word}-0` }]);
  });

  it("airlock_purge itself refuses a run inside the window it is given, a held run, a future instant and a window under a day", async () => {
    const call = (runId: string, asOf: string, windowDays: number) =>
      app.$queryRawUnsafe(`SELECT "airlock_purge"('${runId}'::uuid, ARRAY['result'], ARRAY[]::integer[], ${asOf}, ${windowDays})`);
    await expect(call(recent.id, "now()", 30)).rejects.toThrow(/inside its 30 day window/);
    await expect(call(heldByAgent.id, "now()", 30)).rejects.toThrow(/under a legal hold/);
    await expect(call(recent.id, "now() + interval '100 days'", 30)).rejects.toThrow(/in the future/);
    await expect(call(recent.id, "now()", 0)).rejects.toThrow(/at least one day/);
    await expect(call(shortExpired.id, "now()", 30)).rejects.toThrow(/already purged/);
  });

  it("a payload NULLed behind the door's back (superuser, triggers off) is named by verify: no purge event covers it", async () => {
    const before = await row(financial.id);
    await tamper(db.prisma, `UPDATE "Run" SET result = NULL, "purgedAt" = now(), purged = '{"result": "2026-01-01"}' WHERE id = '${financial.id}'`);
    expect((await verify()).broken).toMatchObject({ reason: "run_content_mismatch", run: { id: financial.id, field: "result" } });
    await tamper(db.prisma, `UPDATE "Run" SET result = '${JSON.stringify(before.result)}', "purgedAt" = NULL, purged = '{}' WHERE id = '${financial.id}'`);
    expect((await verify()).ok).toBe(true);

    await tamper(db.prisma, `UPDATE "RunToolCall" SET args = NULL, result = NULL, "purgedAt" = now() WHERE "runId" = '${financial.id}'`);
    expect((await verify()).broken).toMatchObject({ reason: "tool_call_digest_mismatch" });
    expect((await verify()).broken?.detail).toContain(financial.id);
  });
});

describe("airlock audit purge / hold / release", () => {
  function io(): CliIo & { out: string; err: string } {
    const sink = { out: "", err: "", stdout: (t: string) => void (sink.out += t), stderr: (t: string) => void (sink.err += t), readStdin: async () => "" };
    return sink;
  }
  const deps = {
    withDatabase: <T>(fn: (db: PrismaClient) => Promise<T>) => fn(app),
    checkpoints: () => ({ keyFile: "", dir: "" }),
    retention: async () => days,
  };

  it("an --as-of not of its form is a usage error (exit 2); one in the future is a refused value (exit 1, one line)", async () => {
    for (const asOf of ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01"]) {
      const sink = io();
      expect(await auditCommand(["purge", "--as-of", asOf], sink, deps), asOf).toBe(2);
      expect(sink.err).toMatch(/--as-of must/);
    }
    const future = io();
    expect(await runCli(["audit", "purge", "--as-of", new Date(Date.now() + DAY_MS).toISOString()], future)).toBe(1);
    expect(future.err).toBe("airlock: --as-of must not be in the future: retention purges what a past instant allows.\n");
  });

  it("purge prints a summary; hold and release act as the person --as names", async () => {
    const sink = io();
    expect(await auditCommand(["purge", "--as-of", new Date().toISOString()], sink, deps)).toBe(0);
    expect(sink.out).toMatch(
      /^Retention as of .*: purged 0 field\(s\) and 0 tool call\(s\) of 0 run\(s\); 1 run\(s\) past their window kept by a legal hold\.\n$/,
    );

    const held = io();
    expect(await auditCommand(["hold", "--run", recent.id, "--reason", "subpoena", "--as", compliance.email], held, deps)).toBe(0);
    const holdId = /Legal hold (\S+) placed/.exec(held.out)![1]!;
    expect(await db.prisma.legalHold.findUniqueOrThrow({ where: { id: holdId } })).toMatchObject({ runId: recent.id, placedBy: compliance.email });
    expect(await auditCommand(["release", "--hold", holdId, "--reason", "done", "--as", compliance.email], io(), deps)).toBe(0);
    expect(await auditCommand(["hold", "--run", recent.id], io(), deps)).toBe(2);
    expect(await auditCommand(["hold", "--run", recent.id, "--agent", "keeper", "--reason", "x"], io(), deps)).toBe(2);
  });
});
