/**
 * `airlock exec` through its two doors, on real parts (PostgreSQL, the demo ledger over stdio, the
 * shipped policies, a real sandbox):
 * - `--agent`: the script is that agent's proposal through submitRun — an escalated run waits for
 *   reviewers (exit 3, its id printed), run.submitted records the door and the person (--as);
 *   with --wait, two reviewers' approvals and a worker make it run, and the regulated result is
 *   recorded as read before it is printed (exit 0); unknown or revoked agents and unknown people
 *   are refused (exit 1);
 * - `--dev`: says on stderr that it is unaudited, runs against the demo upstream or the named
 *   config, and leaves nothing on the host (the sandbox's directories and scratch mount are gone
 *   when it returns);
 * - neither: usage, exit 2.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { generateLedgerData } from "@/lib/demo/ledger/data";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { decideRun } from "@/lib/review/service";
import { revokeAgentAndStopRuns } from "@/lib/runs/cancel";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import { stagingBase } from "@/lib/sandbox/stage";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { EXIT_AWAITING_REVIEW, execCommand } from "./exec";
import type { CliIo } from "./io";
import { runCli } from "./main";

const system: Actor = { type: "system", name: "test" };
const dir = mkdtempSync(join(tmpdir(), "airlock-exec-test-"));
const config = join(dir, "airlock.config.json");
writeFileSync(config, JSON.stringify({ servers: {} }));
writeFileSync(join(dir, "ok.js"), `const fs = await import("node:fs"); fs.writeFileSync("out/report.txt", "x"); return 1;`);
writeFileSync(join(dir, "fails.js"), `throw new Error("no");`);
writeFileSync(join(dir, "invoices.js"), `return (await tools.ledger.listInvoices({ limit: 2 })).invoices.length;`);
/** Reads customers (pii): the shipped policies escalate it to two reviewers, without a plan preview. */
writeFileSync(join(dir, "customers.ts"), `const page = await tools.ledger.listCustomers({ limit: 2 });\nreturn page.customers.length;`);

let db: TestDatabase;
let worker: Runtime | undefined;
const users: Record<string, Extract<Actor, { type: "user" }>> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_DATA_DIR: join(dir, "data"), AIRLOCK_IN_PROCESS_WORKER: "false" });
  await db.prisma.$transaction(async (tx) => {
    for (const [email, role] of [
      ["owner@example.com", "admin"],
      ["dev@example.com", "compliance"],
      ["alice@example.com", "reviewer"],
      ["bob@example.com", "reviewer"],
    ] as const) {
      const created = await createUser(tx, system, { email, role });
      users[email] = { type: "user", id: created.id, email, role };
    }
    await publishPolicyText(tx, system, defaultPolicyText());
    await createAgent(tx, system, { name: "cli-bot", ownerEmail: "owner@example.com" });
    await createAgent(tx, system, { name: "gone-bot", ownerEmail: "owner@example.com" });
  });
  await db.prisma.$transaction((tx) => revokeAgentAndStopRuns(tx, system, "gone-bot"));
}, 120_000);

afterAll(async () => {
  await worker?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

function capture() {
  const out = { stdout: "", stderr: "" };
  const io: CliIo = { stdout: (s) => void (out.stdout += s), stderr: (s) => void (out.stderr += s), readStdin: async () => "" };
  return { out, io };
}

/** This process's sandbox directories, and mounts below them. */
function leftovers(): string[] {
  const prefix = join(stagingBase(), `airlock-sbx-${process.pid}-`);
  const dirs = readdirSync(stagingBase()).map((name) => join(stagingBase(), name));
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "");
  return [...dirs, ...mounts].filter((path) => path.startsWith(prefix));
}

describe("airlock exec --dev", () => {
  it.each([
    ["ok.js", 0],
    ["fails.js", 1],
  ])("%s returns %i, says it is unaudited, with the sandbox's directories and scratch mount already removed", async (file, expected) => {
    const { out, io } = capture();
    expect(await execCommand(["--dev", join(dir, file), "--config", config], io)).toBe(expected);
    expect(out.stderr).toMatch(new RegExp(`^airlock exec: DEV MODE — unaudited: no policy, no review, no audit log; against ${config}\\.\\n`));
    expect(out.stdout).toMatch(/^status: (succeeded|failed)/m);
    expect(leftovers()).toEqual([]);
  });

  it("without --config runs against the demo upstream, not the server's configuration, and says so", async () => {
    const before = await db.prisma.auditEvent.count({ where: { action: { startsWith: "run." } } });
    const { out, io } = capture();
    expect(await execCommand(["--dev", "--allow", "ledger.listInvoices", join(dir, "invoices.js")], io)).toBe(0);
    const devState = join(dir, "data", "ledger-state-dev.json");
    expect(out.stderr).toContain(
      `airlock exec: DEV MODE — unaudited: no policy, no review, no audit log; against the demo upstream (ledger) on its own state, ${devState}, never the server's.`,
    );
    expect(out.stdout).toMatch(/^status: succeeded/m);
    expect(await db.prisma.run.count()).toBe(0);
    expect(await db.prisma.auditEvent.count({ where: { action: { startsWith: "run." } } })).toBe(before);
  });

  it("writes to a demo ledger of its own: the server's ledger state never holds an unaudited refund", async () => {
    const serverState = join(dir, "data", "ledger-state.json");
    const invoice = generateLedgerData().invoices.find((i) => i.status === "paid")!;
    mkdirSync(join(dir, "data"), { recursive: true });
    writeFileSync(serverState, JSON.stringify({ ...generateLedgerData(), idempotency: {}, outbox: [] }));
    const served = readFileSync(serverState, "utf8");
    writeFileSync(
      join(dir, "refund.js"),
      `return (await tools.ledger.issueRefund({ invoiceId: "${invoice.id}", amountMinor: 1, reason: "unaudited dev refund", idempotencyKey: "dev-refund-1" })).refund.id;`,
    );
    expect(await execCommand(["--dev", "--allow", "ledger.issueRefund", join(dir, "refund.js")], capture().io)).toBe(0);
    expect(readFileSync(serverState, "utf8")).toBe(served);
    expect(readFileSync(join(dir, "data", "ledger-state-dev.json"), "utf8")).toContain("unaudited dev refund");
  });

  it("says how to allow a tool when the script called one that was not named", async () => {
    const { out, io } = capture();
    expect(await execCommand(["--dev", join(dir, "invoices.js")], io)).toBe(1);
    expect(out.stdout).toMatch(/CAPABILITY_DENIED/);
    expect(out.stderr).toContain("--dev lets a script call only the tools named with --allow SERVER.TOOL,... (or every tool with --allow-all).");
    const allowed = capture();
    expect(await execCommand(["--dev", "--allow", "ledger.listInvoices", join(dir, "invoices.js")], allowed.io)).toBe(0);
    expect(allowed.out.stderr).not.toContain("--allow SERVER.TOOL");
  });

  it("writes nothing to the server's database (no servers or tools registered) and refuses the server's own configuration file", async () => {
    const registered = async () => [await db.prisma.upstreamServer.count(), await db.prisma.upstreamTool.count()];
    const before = await registered();
    expect(await execCommand(["--dev", "--allow", "ledger.listInvoices", join(dir, "invoices.js")], capture().io)).toBe(0);
    expect(await registered()).toEqual(before);

    // The server's configuration, however it is named: AIRLOCK_CONFIG, through a symlink.
    const alias = join(dir, "same-config.json");
    symlinkSync(config, alias);
    setEnvForChildren({ AIRLOCK_CONFIG: config });
    try {
      const { out, io } = capture();
      expect(await execCommand(["--dev", "--config", alias, "--allow-all", join(dir, "ok.js")], io)).toBe(2);
      expect(out.stderr).toMatch(/--dev does not run against the server's own configuration .*use --agent NAME/);
      expect(out.stderr).not.toContain("DEV MODE");
    } finally {
      setEnvForChildren({ AIRLOCK_CONFIG: "" });
    }
  });
});

describe("airlock exec without a door", () => {
  it("is a usage error: exit 2 naming both doors", async () => {
    const { out, io } = capture();
    expect(await execCommand([join(dir, "ok.js")], io)).toBe(2);
    expect(out.stderr).toMatch(/^airlock exec: say how to run FILE: --agent NAME \(policy, review, audit\) or --dev \(none of them\)\n\nUsage: /);
  });

  it("refuses a script file that is not UTF-8 (a refused value: exit 1) instead of running it with U+FFFD in place of its bytes", async () => {
    const file = join(dir, "latin1.js");
    writeFileSync(file, Buffer.concat([Buffer.from('return "caf'), Buffer.from([0xe9]), Buffer.from('";')]));
    await expect(execCommand([file, "--dev"], capture().io)).rejects.toMatchObject({
      code: "bad_request",
      message: expect.stringContaining("latin1.js is not UTF-8 text"),
    });
  });
});

describe("airlock exec --agent", () => {
  it("submits through intake and policy: an escalated run waits for reviewers, exit 3 with its id; the door and the person are in run.submitted", async () => {
    const { out, io } = capture();
    const code = await runCli(["exec", "--agent", "cli-bot", "--as", "dev@example.com", "--purpose", "count customers", join(dir, "customers.ts")], io);
    expect(out.stderr).toBe("");
    expect(code).toBe(EXIT_AWAITING_REVIEW);
    const run = await db.prisma.run.findFirstOrThrow({ where: { purpose: "count customers" }, include: { agent: true } });
    expect(run).toMatchObject({ status: "pending_review", decision: "escalate", approvalsRequired: 2, agent: { name: "cli-bot" } });
    expect(out.stdout).toContain(`run ${run.id}: pending_review (policy: escalate)`);
    expect(out.stdout).toContain("reason [review-regulated-data]:");
    expect(out.stdout).toContain("reason [review-provenance-missing]: Provenance missing:");
    expect(out.stdout).toMatch(
      new RegExp(`Waiting for reviewers: run ${run.id} is decided in the console \\(https?://[^/]+/runs/${run.id}\\); follow it there\\.`),
    );
    // Not "rerun with --wait": that submits the script again, as a second run for the reviewers.
    expect(out.stdout).toContain("Running this command again submits the script again, as a second run: use --wait to submit and wait in one go.");
    const submitted = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.submitted", subjectId: run.id } });
    expect(submitted).toMatchObject({ actorType: "agent", actorId: run.agentId });
    expect((submitted.data as { via: unknown }).via).toEqual({ door: "cli:exec", type: "user", id: users["dev@example.com"]!.id, email: "dev@example.com" });
    expect(await db.prisma.auditEvent.count({ where: { action: "run.running", subjectId: run.id } })).toBe(0);
  });

  it("--wait waits for the reviewers and the run: two approvals, a worker runs it, the regulated result is recorded as read, then printed (exit 0)", async () => {
    worker = await createRuntime(
      db.prisma,
      { ...demoConfig(join(mkdtempSync(join(tmpdir(), "airlock-ledger-")), "state.json")), sandbox: { isolation: "strict", poolSize: 1 } },
      { databaseUrl: db.url, execute: true },
    );
    const { out, io } = capture();
    const exited = runCli(["exec", "--agent", "cli-bot", "--wait", "--purpose", "count customers, waiting", join(dir, "customers.ts")], io);
    let run = await db.prisma.run.findFirst({ where: { purpose: "count customers, waiting" } });
    for (let i = 0; i < 200 && run?.status !== "pending_review"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = await db.prisma.run.findFirst({ where: { purpose: "count customers, waiting" } });
    }
    expect(run?.status).toBe("pending_review");
    const seen = {
      codeSha256: run!.codeSha256,
      capabilitySet: run!.capabilitySet,
      inputsDigest: run!.inputsDigest,
      policyVersionId: run!.policyVersionId,
      planDigest: null,
    };
    for (const reviewer of ["alice@example.com", "bob@example.com"]) {
      await decideRun({ db: db.prisma, startExecution: (id) => worker!.startExecution(id) }, users[reviewer]!, { runId: run!.id, verdict: "approve", seen });
    }
    expect(await exited).toBe(0);
    expect(out.stdout).toContain(`run ${run!.id}: pending_review (policy: escalate)`);
    expect(out.stdout).toContain(`run ${run!.id}: succeeded`);
    expect(out.stdout).toMatch(/status: succeeded\nresult: 2\n$/);
    const read = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.result_read", subjectId: run!.id } });
    expect(read.data).toMatchObject({ via: "cli:exec", dataClasses: ["pii"], status: "succeeded" });
    expect((await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "run.submitted", subjectId: run!.id } })).data).toMatchObject({
      via: { door: "cli:exec", type: "system", name: "cli" },
    });
  }, 60_000);

  it.each([
    [["--agent", "nobody"], "airlock: No agent named nobody.\n"],
    [["--agent", "gone-bot"], "airlock: Agent gone-bot is revoked.\n"],
    [["--agent", "cli-bot", "--as", "stranger@example.com"], "airlock: No user with email stranger@example.com.\n"],
  ])("%j is refused with one line, exit 1, and nothing is submitted", async (flags, message) => {
    const runs = await db.prisma.run.count();
    const { out, io } = capture();
    expect(await runCli(["exec", ...flags, join(dir, "customers.ts")], io)).toBe(1);
    expect(out.stderr).toBe(message);
    expect(await db.prisma.run.count()).toBe(runs);
  });
});
