/**
 * The sandbox level a process runs at: the host probe is repeated after a failure instead of being
 * cached forever (a clock is passed in, nothing sleeps); start-up refuses a level the host cannot
 * meet unless the config allows degrading; and a degraded runtime decides and runs at
 * permission-only, where the shipped policy denies scripts that are not read-only — through real
 * intake, real Cedar, the real ledger upstream and a real sandbox; a start that fails part-way
 * leaves none of the upstream processes it had started running.
 */
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { submitRun } from "@/lib/intake/submit";
import { runColumn } from "@/lib/contracts/run-columns";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { cachedHostProbe, detectHost, REPROBE_AFTER_MS, type HostFacts } from "@/lib/sandbox/host";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { checkIsolation, describeIsolation, IsolationUnavailable, isolationNotice } from "./isolation";
import { createRuntime, demoConfig, type Runtime } from "./runtime";
import type { AgentActor } from "./service";

let real: HostFacts;
/** This host's facts as a host without bubblewrap would report them (bwrap cannot be uninstalled for a test). */
let noBwrap: HostFacts;

beforeAll(async () => {
  real = await detectHost();
  expect(real.bwrapPath).not.toBeNull(); // the tests below need a host where strict works
  noBwrap = { ...real, bwrapPath: null };
});

describe("the host probe", () => {
  it("probes again 30 s after a failed probe, and keeps a successful one", async () => {
    let now = 1_000;
    let installed = false;
    let probes = 0;
    const probe = cachedHostProbe(
      async () => {
        probes++;
        return installed ? real : noBwrap;
      },
      () => now,
    );

    expect((await probe()).bwrapPath).toBeNull();
    installed = true; // bubblewrap is installed while the process runs
    now += REPROBE_AFTER_MS - 1;
    expect((await probe()).bwrapPath).toBeNull();
    expect(probes).toBe(1);
    now += 1;
    expect((await probe()).bwrapPath).toBe(real.bwrapPath);
    expect(probes).toBe(2);
    now += 24 * 3600_000;
    expect((await probe()).bwrapPath).toBe(real.bwrapPath);
    expect(probes).toBe(2);
  });

  it("probes again 30 s after a probe that threw, sharing one probe between concurrent callers", async () => {
    let now = 0;
    let probes = 0;
    const probe = cachedHostProbe(
      async () => {
        probes++;
        if (probes === 1) throw new Error("no Node >= 26.10.0 found");
        return real;
      },
      () => now,
    );
    const [first, second] = await Promise.allSettled([probe(), probe()]);
    expect(first).toMatchObject({ status: "rejected", reason: { message: "no Node >= 26.10.0 found" } });
    expect(second.status).toBe("rejected");
    await expect(probe()).rejects.toThrow("no Node");
    expect(probes).toBe(1);
    now = REPROBE_AFTER_MS;
    await expect(probe()).resolves.toBe(real);
    expect(probes).toBe(2);
  });
});

describe("checkIsolation", () => {
  const strict = { isolation: "strict", poolSize: 1 } as const;

  it("gives strict on a host where bubblewrap really starts a sandbox", async () => {
    const check = await checkIsolation(strict, { execute: true });
    expect(check).toEqual({ configured: "strict", level: "strict", degraded: null, probed: true });
    expect(describeIsolation(check)).toBe("Sandbox isolation: strict (bubblewrap, Node permission model, prlimit).");
    expect(isolationNotice(check)).toBeNull();
  });

  it("refuses strict without bubblewrap, naming the fix, unless allowDegraded is set", async () => {
    const refused = checkIsolation(strict, { execute: true, probe: async () => noBwrap });
    await expect(refused).rejects.toBeInstanceOf(IsolationUnavailable);
    await expect(refused).rejects.toThrow(
      'sandbox isolation "strict" cannot be met: bubblewrap (bwrap) is missing or cannot create namespaces on this host. Install it (apt-get install -y bubblewrap), or set "sandbox": { "allowDegraded": true } in airlock.config.json to start at permission-only.',
    );
    const degraded = await checkIsolation({ ...strict, allowDegraded: true }, { execute: true, probe: async () => noBwrap });
    expect(degraded).toMatchObject({ level: "permission-only", degraded: expect.stringContaining("bubblewrap") });
    expect(describeIsolation(degraded)).toMatch(/^Sandbox isolation: permission-only \(DEGRADED: bubblewrap .* not read-only\)\.$/);
    expect(isolationNotice(degraded)).toMatch(/^Sandbox degraded: running at permission-only \(bubblewrap/);
  });

  it("refuses a host that cannot run any sandbox, whatever the config allows", async () => {
    const allow = { ...strict, allowDegraded: true };
    await expect(checkIsolation(allow, { execute: true, probe: async () => ({ ...noBwrap, prlimitPath: null }) })).rejects.toThrow(/prlimit is not installed/);
    await expect(
      checkIsolation(allow, {
        execute: true,
        probe: () => Promise.reject(new Error("no Node >= 26.10.0 found")),
      }),
    ).rejects.toThrow("the sandbox cannot start on this host: no Node >= 26.10.0 found");
  });

  it("decides for workers without probing: the configured level, or permission-only when they may degrade", async () => {
    const unused = () => Promise.reject(new Error("a process that does not execute must not probe"));
    expect(await checkIsolation(strict, { execute: false, probe: unused })).toMatchObject({ level: "strict", degraded: null, probed: false });
    expect(await checkIsolation({ ...strict, allowDegraded: true }, { execute: false, probe: unused })).toMatchObject({
      level: "permission-only",
      degraded: expect.stringContaining("allowDegraded"),
    });
  });
});

describe("a runtime below strict, through intake, policy and the sandbox", () => {
  const system: Actor = { type: "system", name: "test" };
  let db: TestDatabase;
  let agent: AgentActor;
  const runtimes: Runtime[] = [];
  const WRITE = `await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "Please pay" }); return "sent";`;
  const READ = `const page = await tools.ledger.listInvoices({ limit: 5 }); return page.invoices.length;`;

  beforeAll(async () => {
    db = await createTestDatabase();
    await db.prisma.$transaction(async (tx) => {
      await createUser(tx, system, { email: "owner@example.com", role: "admin" });
      await publishPolicyText(tx, system, defaultPolicyText());
    });
    const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "analyst", ownerEmail: "owner@example.com" }));
    const row = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
    agent = { type: "agent", id: row.id, name: row.name, ownerId: row.ownerId, scopes: created.scopes };
  }, 60_000);

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await db?.drop();
  });

  async function runtimeWith(sandbox: Runtime["config"]["sandbox"], execute: boolean): Promise<Runtime> {
    const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
    const runtime = await createRuntime(db.prisma, { ...demoConfig(stateFile), sandbox }, { databaseUrl: db.url, execute });
    runtimes.push(runtime);
    return runtime;
  }

  it("denies a write at permission-only with the reason, and runs a read-only script at permission-only", async () => {
    const runtime = await runtimeWith({ isolation: "permission-only", poolSize: 1 }, true);
    expect(runtime.sandbox).toMatchObject({ level: "permission-only", probed: true });

    const write = await submitRun(runtime, agent, { code: WRITE, purpose: "Remind a customer" });
    expect(write).toMatchObject({ status: "denied", error: { code: "POLICY_DENIED" } });
    expect(write.reasons).toContainEqual({ policyId: "deny-writes-at-permission-only", text: expect.stringContaining("permission-only") });
    const stored = await db.prisma.run.findUniqueOrThrow({ where: { id: write.runId } });
    const proposal = runColumn(stored, "policyRequest")!.entities.find((e) => e.uid.type === "Proposal")!;
    expect(proposal.attrs).toMatchObject({ isolation: "permission-only", effect: "write" });
    expect(await db.prisma.runToolCall.count({ where: { runId: write.runId } })).toBe(0);

    const read = await submitRun(runtime, agent, { code: READ, purpose: "Count invoices" });
    expect(read.decision).toBe("allow");
    await expect
      .poll(async () => (await db.prisma.run.findUniqueOrThrow({ where: { id: read.runId } })).status, { timeout: 60_000, interval: 100 })
      .toBe("succeeded");
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: read.runId } })).isolation).toBe("permission-only");
  }, 120_000);

  it("a start that fails after the upstreams connected leaves none of them running", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
    /** Processes whose command line names this test's ledger state file: the ledger the broker started. */
    const ledgers = async () => {
      const found: number[] = [];
      for (const pid of (await readdir("/proc")).filter((name) => /^\d+$/.test(name))) {
        const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
        if (cmdline.includes(stateFile)) found.push(Number(pid));
      }
      return found;
    };
    // The queue's connection is refused (a wrong password), after the broker has started the ledger.
    const refused = new URL(db.url);
    refused.password = "not-the-password";
    const config = { ...demoConfig(stateFile), sandbox: { isolation: "permission-only" as const, poolSize: 1 } };
    await expect(createRuntime(db.prisma, config, { databaseUrl: refused.toString(), execute: true })).rejects.toThrow(/password/);
    await expect.poll(ledgers, { timeout: 10_000, interval: 100 }).toEqual([]);
  }, 60_000);

  it("a web process whose workers may degrade decides at permission-only", async () => {
    const runtime = await runtimeWith({ isolation: "strict", poolSize: 1, allowDegraded: true }, false);
    expect(isolationNotice(runtime.sandbox)).toContain("Sandbox degraded: running at permission-only");
    const write = await submitRun(runtime, agent, { code: WRITE, purpose: "Remind a customer again" });
    expect(write.status).toBe("denied");
    expect(write.reasons.map((r) => r.policyId)).toContain("deny-writes-at-permission-only");
  }, 60_000);
});
