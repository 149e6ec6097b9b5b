/**
 * `airlock policy propose|publish|approve` on real parts: the demo seed, PostgreSQL, intake with the
 * demo ledger. The attack: one admin publishes `permit(principal, action, resource)` and then an
 * agent moves money with no reviewer. Alone, the admin only proposes; the refund still waits for
 * reviewers until a second admin approves.
 */
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticateAgentToken } from "@/lib/auth/agents";
import type { Actor } from "@/lib/contracts/scopes";
import { seedDemo } from "@/lib/demo/seed";
import { setEnvForChildren } from "@/lib/env";
import { submitRun } from "@/lib/intake/submit";
import { publishedPolicy } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { CliIo } from "./io";
import { runCli } from "./main";

function capture(): CliIo & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    readStdin: async () => "",
  };
  return io;
}

const REFUND = `return await tools.ledger.issueRefund({ invoiceId: "inv_0001", amountMinor: 100, reason: "test", idempotencyKey: "refund-12345" });`;

let db: TestDatabase;
let runtime: Runtime;
let agent: Extract<Actor, { type: "agent" }>;
let permitAll: string;
let dir: string;

/** Permit-all with a note of its own: the same text cannot be proposed twice. */
async function permitAllNoted(note: string): Promise<string> {
  const file = join(dir, `permit-all-${note}.cedar`);
  await writeFile(file, `${await readFile(permitAll, "utf8")}// ${note}\n`);
  return file;
}

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
  const credentials = await seedDemo(db.prisma, { password: "a long enough demo password" });
  agent = (await authenticateAgentToken(db.prisma, credentials!.agent.token))!;
  dir = await mkdtemp(join(tmpdir(), "airlock-four-eyes-"));
  permitAll = join(dir, "permit-all.cedar");
  await writeFile(permitAll, '@id("everything")\n@reason("Anything goes.")\npermit (principal, action, resource);\n');
  runtime = await createRuntime(db.prisma, demoConfig(join(dir, "ledger.json")), { databaseUrl: db.url, execute: false });
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

async function cli(...argv: string[]) {
  const io = capture();
  const code = await runCli(argv, io);
  return { code, out: io.out, err: io.err };
}

describe("airlock policy: four eyes", () => {
  it("one admin alone cannot publish permit-all: publish only proposes, approving their own is refused (audited), and a refund still waits for reviewers", async () => {
    const seeded = (await publishedPolicy(db.prisma))!.version;
    const published = await cli("policy", "publish", "--file", permitAll, "--as", "admin@airlock.local");
    expect(published).toMatchObject({ code: 0, err: "" });
    const version = Number(/Proposed policy version (\d+)/.exec(published.out)?.[1]);
    expect(version).toBeGreaterThan(seeded);

    const own = await cli("policy", "approve", "--version", String(version), "--as", "admin@airlock.local");
    expect(own).toMatchObject({ code: 1, err: `airlock: You proposed version ${version}; a second admin must approve it.\n` });
    const refusal = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "auth.forbidden" }, orderBy: { id: "desc" } });
    expect(refusal.data).toMatchObject({ door: "cli:policy approve", reason: "own_proposal" });

    expect((await publishedPolicy(db.prisma))!.version).toBe(seeded);
    const run = await submitRun(runtime, agent, { code: REFUND, purpose: "Refund a customer" });
    expect(run).toMatchObject({ decision: "escalate", status: "previewing" });
  });

  it("a reviewer cannot approve; without --as nothing is proposed", async () => {
    const again = await cli("policy", "propose", "--file", permitAll, "--as", "admin@airlock.local");
    expect(again).toMatchObject({ code: 1, err: expect.stringMatching(/^airlock: This text is version \d+, proposed already; propose a change to it\.\n$/) });
    const { out } = await cli("policy", "propose", "--file", await permitAllNoted("second"), "--as", "admin@airlock.local");
    const version = /Proposed policy version (\d+)/.exec(out)![1]!;
    const reviewer = await cli("policy", "approve", "--version", version, "--as", "reviewer@airlock.local");
    expect(reviewer.code).toBe(1);
    expect(reviewer.err).toContain("policies:manage");
    const refusal = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "auth.forbidden" }, orderBy: { id: "desc" } });
    expect(refusal.data).toMatchObject({ door: "cli:policy approve", scope: "policies:manage" });

    const anonymous = await cli("policy", "publish", "--file", permitAll);
    expect(anonymous.code).toBe(2);
    expect(anonymous.err).toContain("--as is required");
    expect(await cli("policy", "approve", "--version", "zero", "--as", "admin2@airlock.local")).toMatchObject({ code: 2 });
    expect(await cli("policy", "approve", "--version", version, "--as", "nobody@airlock.local")).toMatchObject({ code: 1 });
    expect(await db.prisma.policyVersion.count({ where: { status: "proposed" } })).toBe(2);
  });

  it("a second admin approves: the version is published and decides the next proposal", async () => {
    const { out } = await cli("policy", "propose", "--file", await permitAllNoted("third"), "--as", "admin@airlock.local");
    const version = Number(/Proposed policy version (\d+)/.exec(out)![1]);
    const approved = await cli("policy", "approve", "--version", String(version), "--as", "admin2@airlock.local");
    expect(approved).toMatchObject({ code: 0, out: `Approved policy version ${version}; it is published and decides new proposals from now on.\n` });
    expect((await publishedPolicy(db.prisma))!.version).toBe(version);
    // The control: what the single admin could not do above, two admins did.
    const run = await submitRun(runtime, agent, { code: REFUND, purpose: "Refund a customer again" });
    expect(run).toMatchObject({ decision: "allow" });
  });
});
