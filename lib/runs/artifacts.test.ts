/**
 * Artifacts on real parts (PostgreSQL, the strict sandbox, the shipped policies, the executor): a
 * hostile script's files under ./out/ are stored by content in the terminal write, sealed by its
 * event, typed by their bytes (an HTML file named x.png is not an image), handed out only after
 * `run.artifact_downloaded` is committed, and the tables refuse every change but retention's.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tamper } from "@/lib/audit/testing";
import { verifyAuditChain } from "@/lib/audit/verify";
import type { Actor } from "@/lib/contracts/scopes";
import { type PrismaClient } from "@/lib/db";
import { jsonDigest } from "@/lib/digest";
import { submitRun } from "@/lib/intake/submit";
import type { TestDatabase } from "@/lib/testing/db";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { artifactRecords, loadRunArtifacts, readArtifact, storeArtifacts, type ArtifactRecord } from "./artifacts";
import { getRun, type RunView } from "./service";
import { transitionRun } from "./states";
import { connectAsAppRole, type AppRoleClient } from "@/lib/testing/app-role";

const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const CSV = "name,amount\\n<b>alice</b>,=1+2\\n";

/** A script that writes what a hostile script would, next to ordinary report files. */
export const HOSTILE_OUT_SCRIPT = `const fs = await import("node:fs");
fs.mkdirSync("out/sub", { recursive: true });
fs.writeFileSync("out/report.csv", "${CSV}");
fs.writeFileSync("out/copy.csv", "${CSV}");
fs.writeFileSync("out/data.json", JSON.stringify({ a: [1, 2, { b: "<script>alert(1)</script>" }] }));
fs.writeFileSync("out/chart.svg", '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="teal"/></svg>');
fs.writeFileSync("out/evil.html", "<script>alert(document.cookie)</script>");
fs.writeFileSync("out/evil.svg", '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>');
fs.writeFileSync("out/x.png", "<html><script>alert(3)</script></html>");
fs.writeFileSync("out/sub/real.png", Buffer.from("${PNG_1X1}", "base64"));
return "wrote";`;

let ledger: LedgerRuntime;
let db: TestDatabase;
let runId: string;
let person: Actor;
const system: Actor = { type: "system", name: "test" };

async function finished(id: string): Promise<RunView> {
  for (let i = 0; i < 6; i++) {
    const view = await getRun(ledger.runtime, ledger.agent, { runId: id, waitSeconds: 20 });
    if (!["queued", "running"].includes(view.status)) return view;
  }
  throw new Error(`run ${id} did not finish`);
}

const owner = () => person as Extract<Actor, { type: "user" }>;
const downloads = () => db.prisma.auditEvent.findMany({ where: { action: "run.artifact_downloaded", subjectId: runId }, orderBy: { id: "asc" } });

beforeAll(async () => {
  ledger = await startLedgerRuntime("artist");
  db = ledger.db;
  const owner = await db.prisma.user.findUniqueOrThrow({ where: { email: "owner@example.com" } });
  person = { type: "user", id: owner.id, email: owner.email, role: owner.role };
  const view = await submitRun(ledger.runtime, ledger.agent, { code: HOSTILE_OUT_SCRIPT, language: "javascript", purpose: "write reports" });
  runId = view.runId;
  expect(await finished(runId)).toMatchObject({ status: "succeeded" });
}, 180_000);

afterAll(async () => {
  await ledger?.close();
});

describe("storing a run's artifacts", () => {
  it("stores every file by content with the type its bytes show, never the one its name claims", async () => {
    const rows = await db.prisma.runArtifact.findMany({ where: { runId }, orderBy: { name: "asc" } });
    expect(rows.map((r) => [r.name, r.mediaType])).toEqual([
      ["chart.svg", "image/svg+xml"],
      ["copy.csv", "text/csv"],
      ["data.json", "application/json"],
      ["evil.html", "text/plain"],
      ["evil.svg", "image/svg+xml"],
      ["report.csv", "text/csv"],
      ["sub/real.png", "image/png"],
      ["x.png", "text/plain"],
    ]);
    for (const row of rows) {
      const blob = await db.prisma.artifactBlob.findUniqueOrThrow({ where: { sha256: row.sha256 } });
      expect(createHash("sha256").update(blob.bytes!).digest("hex")).toBe(row.sha256);
      expect(blob.sizeBytes).toBe(row.sizeBytes);
    }
    // The same bytes twice are one blob.
    const csv = rows.filter((r) => r.name.endsWith(".csv"));
    expect(csv[0]!.sha256).toBe(csv[1]!.sha256);
    expect(await db.prisma.artifactBlob.count({ where: { sha256: csv[0]!.sha256 } })).toBe(1);
  });

  it("the terminal event digests the list with each sha256 and type, and the chain verifies", async () => {
    const run = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const execution = run.execution as { artifacts: { name: string; sha256: string; sizeBytes: number; mediaType: string }[] };
    const rows = await db.prisma.runArtifact.findMany({ where: { runId }, orderBy: { name: "asc" } });
    expect([...execution.artifacts].sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      rows.map(({ name, sha256, sizeBytes, mediaType }) => ({ name, sha256, sizeBytes, mediaType })),
    );
    const terminal = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: runId, action: "run.succeeded" } });
    expect((terminal.data as { contentDigests: { execution: string } }).contentDigests.execution).toBe(jsonDigest(run.execution as never));
    expect(await verifyAuditChain(db.prisma, { checkpoints: null })).toMatchObject({ ok: true });
  });

  it("refuses to store bytes that do not match the envelope's sha256, or a name outside the sandbox's rule", () => {
    const bytes = Buffer.from("hello");
    const good = { name: "a.txt", sizeBytes: 5, sha256: createHash("sha256").update(bytes).digest("hex"), base64: bytes.toString("base64") };
    expect(artifactRecords([good])[0]).toMatchObject({ name: "a.txt", mediaType: "text/plain" });
    expect(() => artifactRecords([{ ...good, sha256: "0".repeat(64) }])).toThrow(/do not match/);
    for (const name of ["../etc/passwd", "a/../b", "/abs", "é.txt", "a\u202Eb.txt", ""]) {
      expect(() => artifactRecords([{ ...good, name }]), name).toThrow(/sandbox's rule/);
    }
  });
});

describe("verification", () => {
  const verify = () => verifyAuditChain(db.prisma, { checkpoints: null });

  it("names the run when an artifact's bytes, row or list is changed behind the triggers", async () => {
    expect(await verify()).toMatchObject({ ok: true });
    const row = await db.prisma.runArtifact.findFirstOrThrow({ where: { runId, name: "evil.html" } });
    const tampered = [
      [`UPDATE "ArtifactBlob" SET bytes = 'harmless' WHERE sha256 = '${row.sha256}'`, /bytes of its artifact "evil.html" no longer match/],
      // Deleted as retention would, but with no run.purged event naming the run's artifacts.
      [
        `UPDATE "ArtifactBlob" SET bytes = NULL, "purgedAt" = now() WHERE sha256 = '${row.sha256}'`,
        /bytes of its artifact "evil.html" are gone, and no run.purged/,
      ],
      [`UPDATE "RunArtifact" SET "mediaType" = 'image/png' WHERE "runId" = '${runId}' AND name = 'evil.html'`, /"evil.html" is stored with another/],
      [`DELETE FROM "RunArtifact" WHERE "runId" = '${runId}' AND name = 'evil.html'`, /"evil.html" is sealed but not stored/],
      [
        `INSERT INTO "RunArtifact" ("runId", name, sha256, "sizeBytes", "mediaType") VALUES ('${runId}', 'extra.html', '${row.sha256}', ${row.sizeBytes}, 'text/plain')`,
        /"extra.html" is stored but was never sealed/,
      ],
    ] as const;
    const blob = await db.prisma.artifactBlob.findUniqueOrThrow({ where: { sha256: row.sha256 } });
    const restore = [
      `UPDATE "ArtifactBlob" SET bytes = decode('${Buffer.from(blob.bytes!).toString("hex")}', 'hex'), "purgedAt" = NULL WHERE sha256 = '${row.sha256}'`,
      `DELETE FROM "RunArtifact" WHERE "runId" = '${runId}' AND name IN ('evil.html', 'extra.html')`,
      `INSERT INTO "RunArtifact" ("runId", name, sha256, "sizeBytes", "mediaType", "createdAt") VALUES ('${runId}', 'evil.html', '${row.sha256}', ${row.sizeBytes}, '${row.mediaType}', '${row.createdAt.toISOString()}')`,
    ];
    for (const [sql, detail] of tampered) {
      await tamper(db.prisma, sql);
      const report = await verify();
      expect(report.broken, sql).toMatchObject({ reason: "run_content_mismatch", run: { id: runId, field: "artifacts" } });
      expect(report.broken?.detail).toMatch(detail);
      await tamper(db.prisma, ...restore);
      expect(await verify(), sql).toMatchObject({ ok: true });
    }
  });
});

describe("reading an artifact", () => {
  it("hands out the bytes after recording run.artifact_downloaded, with the person, the run and the file", async () => {
    const before = (await downloads()).length;
    const served = await readArtifact(db.prisma, person, { runId, name: "evil.html", via: "download" });
    expect(served.contentType).toBe("application/octet-stream");
    expect(served.bytes.toString()).toBe("<script>alert(document.cookie)</script>");
    const events = (await downloads()).slice(before);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      actorType: "user",
      actorId: owner().id,
      subjectType: "run",
      subjectId: runId,
      data: { name: "evil.html", sha256: served.sha256, sizeBytes: served.sizeBytes, via: "download" },
    });
  });

  it("serves an image only when its bytes are a PNG or an SVG: the HTML named x.png is refused, unrecorded", async () => {
    expect((await readArtifact(db.prisma, person, { runId, name: "sub/real.png", via: "image" })).contentType).toBe("image/png");
    expect((await readArtifact(db.prisma, person, { runId, name: "chart.svg", via: "image" })).contentType).toBe("image/svg+xml");
    const before = (await downloads()).length;
    await expect(readArtifact(db.prisma, person, { runId, name: "x.png", via: "image" })).rejects.toMatchObject({ code: "bad_request" });
    await expect(readArtifact(db.prisma, person, { runId, name: "evil.html", via: "image" })).rejects.toMatchObject({ code: "bad_request" });
    expect(await downloads()).toHaveLength(before);
  });

  it("an odd name, a traversal or another run's id is not found, the same way", async () => {
    for (const name of ["../x.png", "sub/../x.png", "x.png/", "%2e%2e/x.png", "x\u0000.png", "é.csv", "missing.csv"]) {
      await expect(readArtifact(db.prisma, person, { runId, name, via: "download" }), name).rejects.toMatchObject({ code: "not_found" });
    }
    await expect(readArtifact(db.prisma, person, { runId: "not-a-uuid", name: "x.png", via: "download" })).rejects.toMatchObject({ code: "not_found" });
    await expect(readArtifact(db.prisma, person, { runId: crypto.randomUUID(), name: "x.png", via: "download" })).rejects.toMatchObject({ code: "not_found" });
  });

  it("no event, no bytes: when the audit write fails the reader gets an error", async () => {
    await db.prisma.$executeRawUnsafe(`CREATE FUNCTION refuse_download_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.action = 'run.artifact_downloaded' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$`);
    await db.prisma.$executeRawUnsafe(
      `CREATE TRIGGER refuse_download_event BEFORE INSERT ON "AuditPending" FOR EACH ROW EXECUTE FUNCTION refuse_download_event()`,
    );
    try {
      await expect(readArtifact(db.prisma, person, { runId, name: "report.csv", via: "download" })).rejects.toThrow(/audit refused/);
    } finally {
      await db.prisma.$executeRawUnsafe(`DROP TRIGGER refuse_download_event ON "AuditPending"`);
      await db.prisma.$executeRawUnsafe(`DROP FUNCTION refuse_download_event()`);
    }
  });
});

describe("append-only artifact tables", () => {
  let appRole: AppRoleClient;
  let app: PrismaClient;

  beforeAll(async () => {
    appRole = await connectAsAppRole(db);
    app = appRole.client;
  });

  afterAll(() => appRole?.drop());

  it("the app role cannot change, delete or purge artifacts, nor insert a blob whose bytes are not its sha256", async () => {
    const row = await db.prisma.runArtifact.findFirstOrThrow({ where: { runId, name: "report.csv" } });
    for (const [sql, refusal] of [
      [`UPDATE "RunArtifact" SET "mediaType" = 'image/png' WHERE "runId" = '${runId}'`, /permission denied|append-only/],
      [`DELETE FROM "RunArtifact" WHERE "runId" = '${runId}'`, /permission denied|append-only/],
      [`DELETE FROM "ArtifactBlob" WHERE sha256 = '${row.sha256}'`, /permission denied|append-only/],
      [`UPDATE "ArtifactBlob" SET bytes = 'forged' WHERE sha256 = '${row.sha256}'`, /append-only/],
      [`UPDATE "ArtifactBlob" SET bytes = NULL, "purgedAt" = now() WHERE sha256 = '${row.sha256}'`, /append-only/],
      [`INSERT INTO "ArtifactBlob" (sha256, "sizeBytes", bytes) VALUES ('${"0".repeat(64)}', 6, 'forged')`, /must match its sha256/],
    ] as const) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(refusal);
    }
    // Even the owner cannot edit a blob or a link with the triggers on.
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "ArtifactBlob" SET bytes = 'forged' WHERE sha256 = '${row.sha256}'`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`TRUNCATE "RunArtifact"`)).rejects.toThrow(/append-only/);
  });

  it("a blob purged by retention answers gone with its date; the same bytes stored by a later run come back", async () => {
    const row = await db.prisma.runArtifact.findFirstOrThrow({ where: { runId, name: "data.json" } });
    // Retention's door (airlock_purge's owner with the setting on): the owner here, in one transaction.
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT set_config('airlock.purge_door', 'open', true)`);
      await tx.$executeRawUnsafe(`UPDATE "ArtifactBlob" SET bytes = NULL, "purgedAt" = '2027-03-04T05:06:07Z' WHERE sha256 = '${row.sha256}'`);
    });
    const gone = readArtifact(db.prisma, person, { runId, name: "data.json", via: "download" });
    await expect(gone).rejects.toMatchObject({ code: "gone", status: 410 });
    await expect(gone).rejects.toThrow(/purged on 2027-03-04 by retention/);
    expect((await loadRunArtifacts(db.prisma, runId)).find((a) => a.name === "data.json")).toMatchObject({
      bytes: null,
      purgedAt: new Date("2027-03-04T05:06:07Z"),
    });

    const view = await submitRun(ledger.runtime, ledger.agent, {
      code: `const fs = await import("node:fs"); fs.writeFileSync("out/again.json", JSON.stringify({ a: [1, 2, { b: "<script>alert(1)</script>" }] })); return 1;`,
      language: "javascript",
      purpose: "write the same json again",
    });
    expect(await finished(view.runId)).toMatchObject({ status: "succeeded" });
    const again = await db.prisma.runArtifact.findFirstOrThrow({ where: { runId: view.runId } });
    expect(again.sha256).toBe(row.sha256);
    expect(await db.prisma.artifactBlob.findUniqueOrThrow({ where: { sha256: row.sha256 } })).toMatchObject({ purgedAt: null });
    expect((await readArtifact(db.prisma, person, { runId, name: "data.json", via: "download" })).sha256).toBe(row.sha256);
  });

  /** A run row in `running`, as the executor holds it before its terminal write. */
  async function runningRun(purpose: string): Promise<string> {
    const [run] = await db.prisma.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", "updatedAt")
       VALUES (gen_random_uuid(), '${ledger.agent.id}', 'running', 'javascript', 'return 1;', 'x', '${purpose}', 'x', '${randomBytes(8).toString("hex")}', now())
       RETURNING id::text`,
    );
    return run!.id;
  }

  /** The executor's terminal write, as the app role: the sealed list, then the files. */
  async function finishAsApp(id: string, records: ArtifactRecord[]): Promise<void> {
    const artifacts = records.map(({ bytes: _, ...sealed }) => sealed);
    const execution = { wallMs: 1, cpuMs: 1, peakRssMb: 1, toolCalls: 0, logs: [], flags: [], truncated: false, artifacts };
    await app.$transaction(async (tx) => {
      expect(await transitionRun(tx, system, { runId: id, from: "running", to: "succeeded", data: { execution } })).toBe(true);
      await storeArtifacts(tx, id, records);
    });
  }

  const fileOf = (name: string, text: string) =>
    artifactRecords([
      { name, sizeBytes: Buffer.byteLength(text), sha256: createHash("sha256").update(text).digest("hex"), base64: Buffer.from(text).toString("base64") },
    ]);

  it("the app role stores artifacts as the executor does, and only ones its run sealed", async () => {
    const id = await runningRun("grants");
    const records = fileOf("grants.txt", "ok");
    await finishAsApp(id, records);
    expect(await db.prisma.runArtifact.count({ where: { runId: id } })).toBe(1);
    // A file the run did not seal cannot be attached to it afterwards, nor its bytes under another name.
    await expect(app.$transaction((tx) => storeArtifacts(tx, id, fileOf("forged.txt", "no")))).rejects.toThrow(/not in the artifacts run/);
    await expect(
      app.$executeRawUnsafe(
        `INSERT INTO "RunArtifact" ("runId", name, sha256, "sizeBytes", "mediaType") VALUES ('${id}', 'renamed.txt', '${records[0]!.sha256}', 2, 'text/plain')`,
      ),
    ).rejects.toThrow(/not in the artifacts run/);
  });

  it("the app role restores purged bytes when a later run writes them again", async () => {
    const first = await runningRun("first");
    await finishAsApp(first, fileOf("again.txt", "same bytes"));
    const { sha256 } = fileOf("again.txt", "same bytes")[0]!;
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT set_config('airlock.purge_door', 'open', true)`);
      await tx.$executeRawUnsafe(`UPDATE "ArtifactBlob" SET bytes = NULL, "purgedAt" = now() WHERE sha256 = '${sha256}'`);
    });
    await finishAsApp(await runningRun("second"), fileOf("later.txt", "same bytes"));
    const blob = await db.prisma.artifactBlob.findUniqueOrThrow({ where: { sha256 } });
    expect([Buffer.from(blob.bytes!).toString(), blob.purgedAt]).toEqual(["same bytes", null]);
  });
});
