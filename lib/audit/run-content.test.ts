/**
 * Run content sealed and verified, on real parts (PostgreSQL, the demo ledger over stdio, the
 * broker, the shipped policies, the strict sandbox): the events of real runs digest every field a
 * person reads, `airlock audit verify` compares the rows with them and names the run and field an
 * edit changed, and the database refuses the app role any change to a written field.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditCommand } from "@/lib/cli/audit";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Actor } from "@/lib/contracts/scopes";
import { type PrismaClient } from "@/lib/db";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { submitRun } from "@/lib/intake/submit";
import { getRun, type RunView } from "@/lib/runs/service";
import { transitionRun } from "@/lib/runs/states";
import type { TestDatabase } from "@/lib/testing/db";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { RUN_CONTENT_FIELDS } from "./run-content";
import { tamper, tempCheckpoints } from "./testing";
import { verifyAuditChain } from "./verify";
import { connectAsAppRole, type AppRoleClient } from "@/lib/testing/app-role";

const system: Actor = { type: "system", name: "test" };
const invoice = generateLedgerData().invoices.find((i) => i.status === "paid")!;
let ledger: LedgerRuntime;
let db: TestDatabase;
/** A run allowed and executed: no tools, a result and a log. */
let plain: string;
/** A refund: previewed (a plan), approved, executed. */
let refund: string;

async function leaving(runId: string, statuses: string[]): Promise<RunView> {
  for (let i = 0; i < 6; i++) {
    const view = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 20 });
    if (!statuses.includes(view.status)) return view;
  }
  throw new Error(`run ${runId} stayed ${statuses.join("/")}`);
}

const verify = () => verifyAuditChain(db.prisma, { checkpoints: null });

/** A bare run row inserted as the superuser, with no audit event: a run from before content digests. */
async function insertRun(status: string, extra = ""): Promise<string> {
  const [row] = await db.prisma.$queryRawUnsafe<{ id: string }[]>(
    `INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", "updatedAt"${extra ? ", result" : ""})
     VALUES (gen_random_uuid(), '${ledger.agent.id}', '${status}', 'javascript', 'return 1;', 'x', 'old run', 'x', '${randomBytes(8).toString("hex")}', now()${extra ? `, '${extra}'` : ""})
     RETURNING id::text`,
  );
  return row!.id;
}

beforeAll(async () => {
  ledger = await startLedgerRuntime("sealer");
  db = ledger.db;
  const a = await submitRun(ledger.runtime, ledger.agent, {
    code: `console.log("adding"); return { sum: 1 + 1 };`,
    language: "javascript",
    purpose: "add two numbers",
    provenance: { model: "test-model", conversationId: "conv-1", prompt: "please add" },
  });
  plain = a.runId;
  expect((await leaving(plain, ["queued", "running"])).status).toBe("succeeded");

  const b = await submitRun(ledger.runtime, ledger.agent, {
    code: `const r = await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: 100, currency: "${invoice.currency}", reason: "sealed", idempotencyKey: "sealed-${invoice.id}" });
return r.refund.id;`,
    purpose: "one refund",
  });
  refund = b.runId;
  expect((await leaving(refund, ["previewing"])).status).toBe("pending_review");
  await db.prisma.$transaction(async (tx) => {
    await transitionRun(tx, system, { runId: refund, from: "pending_review", to: "approved" });
    await transitionRun(tx, system, { runId: refund, from: "approved", to: "queued" });
  });
  ledger.runtime.startExecution(refund);
  expect((await leaving(refund, ["queued", "running"])).status).toBe("succeeded");
}, 180_000);

afterAll(async () => {
  await ledger?.close();
});

describe("run content in the audit chain", () => {
  it("the events of a run digest every field a person reads, as stored, and an intact log verifies", async () => {
    for (const runId of [plain, refund]) {
      const events = await db.prisma.auditEvent.findMany({ where: { subjectType: "run", subjectId: runId }, orderBy: { id: "asc" } });
      const digested = events.flatMap((e) => Object.keys((e.data as { contentDigests?: object }).contentDigests ?? {}));
      expect(new Set(digested)).toEqual(new Set(RUN_CONTENT_FIELDS));
      // The terminal event seals what is still NULL too (the plain run has no plan and no error).
      expect(events.at(-1)).toMatchObject({
        action: "run.succeeded",
        data: { contentDigests: { result: expect.any(String), error: expect.any(String), plan: expect.any(String) } },
      });
    }
    const report = await verify();
    expect(report).toMatchObject({ ok: true, broken: null, runsContentChecked: 2 });
  });

  it("names the run and the field when Run.code is edited with triggers off", async () => {
    const { code } = await db.prisma.run.findUniqueOrThrow({ where: { id: plain }, select: { code: true } });
    await tamper(db.prisma, `UPDATE "Run" SET code = 'return 2;' WHERE id = '${plain}'`);
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(report.broken).toMatchObject({ reason: "run_content_mismatch", run: { id: plain, field: "code" } });
    expect(report.broken?.detail).toContain(plain);
    await tamper(db.prisma, `UPDATE "Run" SET code = '${code.replaceAll("'", "''")}' WHERE id = '${plain}'`);
    expect((await verify()).ok).toBe(true);
  });

  it("names the run and the field when Run.result is edited with triggers disabled, in verify and in the CLI", async () => {
    await db.prisma.$executeRawUnsafe(`ALTER TABLE "Run" DISABLE TRIGGER ALL`);
    try {
      await db.prisma.$executeRawUnsafe(`UPDATE "Run" SET result = '"re_forged"'::jsonb WHERE id = '${refund}'`);
    } finally {
      await db.prisma.$executeRawUnsafe(`ALTER TABLE "Run" ENABLE TRIGGER ALL`);
    }
    const report = await verify();
    expect(report.broken).toMatchObject({ reason: "run_content_mismatch", run: { id: refund, field: "result" } });

    const checkpoints = await tempCheckpoints();
    let stderr = "";
    const code = await auditCommand(
      ["verify"],
      { stdout: () => {}, stderr: (text) => void (stderr += text), readStdin: async () => "" },
      {
        withDatabase: (fn) => fn(db.prisma),
        checkpoints: () => checkpoints,
      },
    );
    expect(code).toBe(1);
    expect(stderr).toContain("run_content_mismatch");
    expect(stderr).toContain(`Run: ${refund}, field: result`);
  });

  it("an edited log (Run.execution) of another run is named too, the first in event order", async () => {
    await tamper(db.prisma, `UPDATE "Run" SET execution = jsonb_set(execution, '{logs}', '[]') WHERE id = '${plain}'`);
    expect((await verify()).broken).toMatchObject({ reason: "run_content_mismatch", run: { id: plain, field: "execution" } });
  });
});

describe("write-once content columns", () => {
  let appRole: AppRoleClient;
  let app: PrismaClient;

  beforeAll(async () => {
    appRole = await connectAsAppRole(db);
    app = appRole.client;
  });

  afterAll(() => appRole?.drop());

  it("the app role cannot change a written content column, nor fill one of a run that ended", async () => {
    for (const sql of [
      `UPDATE "Run" SET code = 'return 2;' WHERE id = '${refund}'`,
      `UPDATE "Run" SET purpose = 'something else' WHERE id = '${refund}'`,
      `UPDATE "Run" SET provenance = '{}' WHERE id = '${plain}'`,
      `UPDATE "Run" SET limits = jsonb_set(limits, '{timeoutMs}', '1') WHERE id = '${refund}'`,
      `UPDATE "Run" SET plan = NULL WHERE id = '${refund}'`,
      `UPDATE "Run" SET result = '"re_forged_again"' WHERE id = '${refund}'`,
      `UPDATE "Run" SET javascript = 'return 3;' WHERE id = '${plain}'`,
      // NULL on a finished run stays NULL: its terminal event digested "no error".
      `UPDATE "Run" SET error = '{"code":"SCRIPT_ERROR","message":"x","untrusted":true}' WHERE id = '${plain}'`,
    ]) {
      await expect(app.$executeRawUnsafe(sql), sql).rejects.toThrow(/run content is write-once/);
    }
    // Columns that are not content still change (the heartbeat, the executor's fence).
    await expect(app.$executeRawUnsafe(`UPDATE "Run" SET "heartbeatAt" = now() WHERE id = '${plain}'`)).resolves.toBe(1);
  });

  it("the state machine's own writes pass: NULL → value once, while the run has not ended", async () => {
    const runId = await insertRun("running");
    const done = await app.$transaction((tx) =>
      transitionRun(tx, system, { runId, from: "running", to: "failed", data: { error: { code: "SCRIPT_ERROR", message: "boom", untrusted: true } } }),
    );
    expect(done).toBe(true);
    await expect(app.$executeRawUnsafe(`UPDATE "Run" SET error = NULL WHERE id = '${runId}'`)).rejects.toThrow(/write-once: error/);
  });

  it("every terminal status freezes the content (the trigger's list matches the state machine)", async () => {
    for (const status of TERMINAL_STATUSES) {
      const runId = await insertRun(status);
      await expect(db.prisma.$executeRawUnsafe(`UPDATE "Run" SET result = '1' WHERE id = '${runId}'`), status).rejects.toThrow(/write-once: result/);
    }
    const live = await insertRun("queued", "1");
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "Run" SET execution = '{}' WHERE id = '${live}'`)).resolves.toBe(1);
    await expect(db.prisma.$executeRawUnsafe(`UPDATE "Run" SET result = '2' WHERE id = '${live}'`)).rejects.toThrow(/write-once: result/);
  });
});
