/**
 * Tools are trusted by people, not on first sight, on real parts: PostgreSQL, the demo ledger and a
 * test upstream whose tool list grows (both over stdio), the runtime's broker and registry, intake
 * and the shipped policies. The seed accepts the first start's tools; a tool an upstream adds
 * later, and every tool of a server added to the config later, is quarantined (calls refused, runs
 * denied) until two admins accept it; an override of a tool's facts changes nothing until a second
 * admin confirms it, and then analysis and policy use it.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import type { Actor } from "@/lib/contracts/scopes";
import { seedDemo } from "@/lib/demo/seed";
import { submitDirectCall } from "@/lib/intake/direct";
import { submitRun } from "@/lib/intake/submit";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { REPO_ROOT } from "@/lib/sandbox/host";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { acceptTool, confirmOverride, proposeOverride } from "./admin";
import { parseConfig, type AirlockConfig } from "./config";
import { applyOverrides, DbPinStore } from "./db-registry";
import { listUpstreamServers } from "./registry-presenter";

type Admin = Extract<Actor, { type: "user" }>;
const signal = new AbortController().signal;
const growing = (...args: string[]) => ({
  transport: "stdio",
  command: join(REPO_ROOT, "node_modules/.bin/tsx"),
  args: [join(REPO_ROOT, "lib/broker/testing/growing-server.ts"), ...args],
  dataClass: "internal",
});

let db: TestDatabase;
let runtime: Runtime;
let ledgerState: string;
/** The file whose creation makes the `live` upstream change its tools while connected. */
let liveTrigger: string;
let ada: Admin;
let alan: Admin;
let agents = 0;

function configWith(servers: Record<string, unknown>): AirlockConfig {
  const ledger = demoConfig(ledgerState);
  const extra = parseConfig({ servers }, join(REPO_ROOT, "airlock.config.json"));
  return { ...ledger, servers: { ...ledger.servers, ...extra.servers }, sandbox: { ...ledger.sandbox, isolation: "strict", poolSize: 1 } };
}

/** A restart: a new runtime (broker, registry sync) over the same database. */
async function restart(config: AirlockConfig): Promise<void> {
  await runtime?.close();
  runtime = await createRuntime(db.prisma, config, { databaseUrl: db.url, execute: false });
}

async function agentNamed(name: string): Promise<AgentActor> {
  const created = await db.prisma.$transaction((tx) => createAgent(tx, { type: "system", name: "test" }, { name, ownerEmail: "admin@airlock.local" }));
  return { type: "agent", id: created.agentId, name, ownerId: ada.id, scopes: created.scopes };
}

/** Submits through intake as a fresh agent (queued runs stay queued here, and count against an agent's budget). */
async function submit(code: string) {
  const agent = await agentNamed(`truster-${++agents}`);
  return submitRun({ ...runtime, db: db.prisma, startExecution: () => {} }, agent, { code, purpose: "trust test", language: "javascript" });
}

async function shown(server: string, tool: string) {
  const servers = await listUpstreamServers(db.prisma);
  return servers.find((s) => s.name === server)!.tools.find((t) => t.name === tool)!;
}

async function admin(email: string): Promise<Admin> {
  const user = await db.prisma.user.findUniqueOrThrow({ where: { email } });
  return { type: "user", id: user.id, email: user.email, role: "admin" };
}

beforeAll(async () => {
  db = await createTestDatabase();
  ledgerState = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  liveTrigger = join(dirname(ledgerState), "live-trigger");
  const initial = configWith({ growing: growing(), live: growing("--live", liveTrigger) });
  expect(await seedDemo(db.prisma, { password: "a long enough demo password", config: initial })).not.toBeNull();
  ada = await admin("admin@airlock.local");
  alan = await admin("admin2@airlock.local");
  await restart(initial);
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

describe("first start", () => {
  it("the seed accepts the tools of the initial config, audited as system:seed; they are callable and a read-only run is auto-approved", async () => {
    const tools = runtime.broker.tools();
    expect(tools.length).toBeGreaterThan(5);
    expect(tools.filter((t) => t.quarantined)).toEqual([]);
    const accepted = await db.prisma.auditEvent.findMany({ where: { action: "tool.accepted" } });
    expect(accepted).toHaveLength(tools.length);
    for (const event of accepted) expect(event).toMatchObject({ actorType: "system", actorId: "seed", data: { firstListing: true } });
    const rows = await db.prisma.upstreamTool.findMany();
    for (const row of rows) expect(row).toMatchObject({ quarantined: false, pinnedHash: row.schemaHash, acceptedBy: ["system:seed"] });
    // The first listing is over: nothing is trusted on first sight from now on.
    expect(await db.prisma.upstreamServer.count({ where: { firstListingAcceptedBy: { not: null } } })).toBe(0);
    expect(await runtime.broker.callTool("growing", "status", {}, signal)).toBe("up");
    expect(await submit(`return await tools.growing.status({});`)).toMatchObject({ decision: "allow", status: "queued" });
  });

  it("a pin write outside the first listing and outside two admins' acceptance is refused", async () => {
    await expect(new DbPinStore(db.prisma).set("growing", "status", "0".repeat(64))).rejects.toThrow(/two admins/);
    await expect(new DbPinStore(db.prisma).set("growing", "exportAll", "0".repeat(64))).rejects.toThrow(/two admins/);
    expect(await db.prisma.upstreamTool.count({ where: { name: "exportAll" } })).toBe(0);
  });
});

describe("an upstream that changes its tools while connected (notifications/tools/list_changed)", () => {
  it("is listed again by the runtime: an added tool and a changed one are quarantined, a dropped one is refused, an unchanged one stays accepted", async () => {
    expect(runtime.broker.tool("live", "status")?.quarantined).toBe(false);
    expect(await runtime.broker.callTool("live", "retired", {}, signal)).toBe("retired");
    await writeFile(liveTrigger, "now");
    // The runtime's own check (every few seconds) lists the upstream again and mirrors the registry.
    await expect
      .poll(() => db.prisma.upstreamTool.count({ where: { name: "exportAll", server: { name: "live" } } }), { timeout: 20_000, interval: 200 })
      .toBe(1);
    expect(runtime.broker.tool("live", "exportAll")).toMatchObject({ quarantined: true, quarantineReason: "new_tool" });
    expect(runtime.broker.tool("live", "status")).toMatchObject({ quarantined: true, quarantineReason: "hash_changed" });
    expect(runtime.broker.tool("live", "retired")).toBeUndefined();
    expect(runtime.broker.tool("live", "steady")?.quarantined).toBe(false);
    expect(await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "status", server: { name: "live" } } })).toMatchObject({
      quarantined: true,
      pinnedDefinition: { description: "Says the service is up." },
    });

    await expect(runtime.broker.callTool("live", "status", {}, signal)).rejects.toThrow(/quarantined/);
    await expect(runtime.broker.callTool("live", "exportAll", {}, signal)).rejects.toThrow(/quarantined/);
    await expect(runtime.broker.callTool("live", "retired", {}, signal)).rejects.toThrow(/unknown tool live\.retired/);
    expect(await runtime.broker.callTool("live", "steady", {}, signal)).toBe("steady");
    expect(await submit(`return await tools.live.status({});`)).toMatchObject({ decision: "deny", status: "denied" });
    expect(await submit(`return await tools.live.exportAll({});`)).toMatchObject({ decision: "deny", status: "denied" });
    const retired = await submit(`return await tools.live.retired({});`);
    expect(retired.findings.map((f) => f.code)).toContain("unknown_tool");
    expect(await submit(`return await tools.live.steady({});`)).toMatchObject({ decision: "allow", status: "queued" });
    // Agents never see the text no admin accepted.
    expect(runtime.broker.declarations("live")).not.toContain("audit-copy@example.com");
  });
});

describe("overrides", () => {
  const listInvoices = `return (await tools.ledger.listInvoices({ limit: 1 })).invoices.length;`;

  it("refuses facts outside the closed schema, a reviewer, and the proposer confirming their own override", async () => {
    const propose = (facts: unknown, actor: Actor = ada) => proposeOverride(db.prisma, actor, { server: "ledger", tool: "listInvoices", facts });
    await expect(propose({ annotations: { readOnlyHint: "no" } })).rejects.toMatchObject({ code: "bad_request" });
    await expect(propose({ annotations: {}, trusted: true })).rejects.toMatchObject({ code: "bad_request" });
    await expect(propose({ annotations: {}, dataClass: "secret" })).rejects.toMatchObject({ code: "bad_request" });
    const reviewer = await db.prisma.user.findUniqueOrThrow({ where: { email: "reviewer@airlock.local" } });
    await expect(propose({ annotations: {} }, { type: "user", id: reviewer.id, email: reviewer.email, role: "reviewer" })).rejects.toMatchObject({
      code: "forbidden",
      details: { scope: "tools:manage" },
    });
    expect(await db.prisma.toolOverride.count()).toBe(0);
  });

  it("one admin's override changes nothing: the run that only reads is still auto-approved", async () => {
    expect(await submit(listInvoices)).toMatchObject({ decision: "allow", status: "queued" });
    const { overrideId } = await proposeOverride(db.prisma, ada, { server: "ledger", tool: "listInvoices", facts: { annotations: { readOnlyHint: false } } });
    await expect(confirmOverride(db.prisma, ada, { server: "ledger", tool: "listInvoices", overrideId })).rejects.toMatchObject({
      code: "forbidden",
      details: { reason: "own_proposal" },
    });
    await applyOverrides(db.prisma, runtime.broker.tools());
    expect(runtime.broker.tool("ledger", "listInvoices")?.annotations.readOnlyHint).toBe(true);
    expect(await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } })).toMatchObject({ annotations: { readOnlyHint: true } });
    expect(await submit(listInvoices)).toMatchObject({ decision: "allow", status: "queued" });
  });

  it("a replaced proposal cannot be confirmed", async () => {
    const waiting = await db.prisma.toolOverride.findFirstOrThrow({ where: { confirmedAt: null, withdrawnAt: null } });
    const replacement = await proposeOverride(db.prisma, alan, { server: "ledger", tool: "listInvoices", facts: { annotations: { readOnlyHint: false } } });
    await expect(confirmOverride(db.prisma, alan, { server: "ledger", tool: "listInvoices", overrideId: waiting.id })).rejects.toMatchObject({
      code: "conflict",
    });
    expect(await db.prisma.toolOverride.findUniqueOrThrow({ where: { id: waiting.id } })).toMatchObject({ withdrawnAt: expect.any(Date), confirmedAt: null });
    // Ada confirms Alan's proposal below; his is the one waiting.
    expect(replacement.overrideId).not.toBe(waiting.id);
  });

  it("confirmed by a second admin, readOnly:false makes the same run escalate instead of auto-approve", async () => {
    const waiting = await db.prisma.toolOverride.findFirstOrThrow({ where: { confirmedAt: null, withdrawnAt: null } });
    await confirmOverride(db.prisma, ada, { server: "ledger", tool: "listInvoices", overrideId: waiting.id });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ annotations: { readOnlyHint: false, destructiveHint: false }, claimedAnnotations: { readOnlyHint: true } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "tool.override_confirmed" } });
    expect(event).toMatchObject({ actorId: ada.id, data: { proposedById: alan.id, facts: { annotations: { readOnlyHint: false } } } });
    // Nothing tells this runtime (it stands for another process): the next submission reads the
    // confirmed override itself.
    expect(runtime.broker.tool("ledger", "listInvoices")?.annotations).toMatchObject({ readOnlyHint: true });
    const escalated = await submit(listInvoices);
    expect(runtime.broker.tool("ledger", "listInvoices")?.annotations).toMatchObject({ readOnlyHint: false });
    expect(runtime.broker.declarations("ledger")).toContain("@readOnlyHint false");
    expect(escalated).toMatchObject({ decision: "escalate" });
    expect(escalated.status).not.toBe("queued");
    expect(escalated.reasons.map((r) => r.policyId)).toContain("review-writes");
    // The console shows which facts were verified by whom.
    const item = await shown("ledger", "listInvoices");
    expect(item.facts.find((f) => f.hint === "readOnlyHint")).toEqual({
      hint: "readOnlyHint",
      label: "readOnly",
      value: false,
      claimed: true,
      overridden: true,
    });
    expect(item.facts.find((f) => f.hint === "destructiveHint")).toMatchObject({ value: false, overridden: false });
    expect(item).toMatchObject({
      accepted: { by: ["system:seed"] },
      override: { facts: ["readOnly: false"], proposedBy: { email: alan.email }, confirmedBy: ada.email },
      proposal: null,
    });
  });
});

describe("after first start", () => {
  beforeAll(async () => {
    // The upstream now serves a tool it did not list before, and the config names a new server.
    await restart(configWith({ growing: growing("--grow"), late: growing() }));
  }, 120_000);

  it("a confirmed override survives a restart: the run still escalates", async () => {
    expect(runtime.broker.tool("ledger", "listInvoices")?.annotations.readOnlyHint).toBe(false);
    expect(await submit(`return (await tools.ledger.listInvoices({ limit: 1 })).invoices.length;`)).toMatchObject({ decision: "escalate" });
  });

  it("a tool the upstream adds is quarantined: calls are refused and a run using it is denied as quarantined_tool", async () => {
    expect(runtime.broker.tool("growing", "exportAll")).toMatchObject({ quarantined: true, annotations: { readOnlyHint: true } });
    expect(runtime.broker.tool("growing", "status")?.quarantined).toBe(false);
    expect(await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "exportAll", server: { name: "growing" } } })).toMatchObject({
      quarantined: true,
      pinnedHash: null,
      pinnedDefinition: null,
      acceptedBy: [],
    });
    await expect(runtime.broker.callTool("growing", "exportAll", {}, signal)).rejects.toThrow(/quarantined/);
    const run = await submit(`return await tools.growing.exportAll({});`);
    expect(run).toMatchObject({ decision: "deny", status: "denied" });
    expect(run.findings).toContainEqual(
      expect.objectContaining({
        code: "quarantined_tool",
        message: "tools.growing.exportAll may not be called: it is new (the upstream added it), and is quarantined until two admins accept it",
      }),
    );
    expect(run.reasons.map((r) => r.policyId)).toContain("deny-quarantined-tools");
    expect(await shown("growing", "exportAll")).toMatchObject({ quarantined: true, quarantineReason: "new_tool", accepted: null });
  });

  it("every tool of a server added to the config later is quarantined", async () => {
    expect(runtime.broker.tools("late").map((t) => t.quarantined)).toEqual([true]);
    await expect(runtime.broker.callTool("late", "status", {}, signal)).rejects.toThrow(/quarantined/);
    expect(await submit(`return await tools.late.status({});`)).toMatchObject({ decision: "deny", status: "denied" });
    const registered = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "upstream.registered", data: { path: ["server"], equals: "late" } } });
    expect(registered).toMatchObject({ actorId: "config", data: { firstListingAcceptedBy: null } });
  });

  it("one admin's acceptance only asks; a second admin's makes the new tool callable, recorded with both names", async () => {
    const hash = runtime.broker.tool("growing", "exportAll")!.hash;
    const input = { server: "growing", tool: "exportAll", schemaHash: hash };
    expect(await acceptTool(db.prisma, ada, input)).toMatchObject({ outcome: "requested" });
    await expect(runtime.broker.callTool("growing", "exportAll", {}, signal)).rejects.toThrow(/quarantined/);
    expect(await submit(`return await tools.growing.exportAll({});`)).toMatchObject({ status: "denied" });

    expect(await acceptTool(db.prisma, alan, input)).toMatchObject({ outcome: "accepted" });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "exportAll", server: { name: "growing" } } });
    expect(row).toMatchObject({ quarantined: false, pinnedHash: hash, acceptedBy: [ada.email, alan.email], acceptedAt: expect.any(Date) });
    expect(await shown("growing", "exportAll")).toMatchObject({ quarantined: false, accepted: { by: [ada.email, alan.email] } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "tool.accepted", actorId: alan.id } });
    expect(event).toMatchObject({ data: { newTool: true, previousHash: null, acceptedHash: hash, requestedById: ada.id } });
    // Nothing told this runtime (the acceptance stands for the CLI's, in another process): the next
    // submission reads the database's pins itself, before it decides, and the broker's calls do too.
    expect(runtime.broker.tool("growing", "exportAll")?.quarantined).toBe(true);
    expect(await submit(`return await tools.growing.exportAll({});`)).toMatchObject({ decision: "allow", status: "queued" });
    expect(await runtime.broker.callTool("growing", "exportAll", {}, signal)).toBe("exported");
  });
});

describe("an upstream that is down at start", () => {
  beforeAll(async () => {
    // Nothing listens on port 9 (discard): the server is configured and unreachable.
    await restart(configWith({ growing: growing("--grow"), down: { transport: "http", url: "http://127.0.0.1:9/mcp", dataClass: "internal" } }));
  }, 120_000);

  it("the runtime starts without it: the other upstreams serve runs, and a run calling it is denied saying the upstream is unavailable", async () => {
    expect(runtime.registry.unavailableServers()).toEqual(["down"]);
    expect(await submit(`return await tools.growing.status({});`)).toMatchObject({ decision: "allow", status: "queued" });
    const denied = await submit(`return await tools.down.anything({});`);
    expect(denied).toMatchObject({ decision: "deny", status: "denied" });
    // Denied for being unreachable, not as a tool that does not exist (which would send the agent to search_tools).
    expect(denied.reasons.map((r) => r.policyId)).toEqual(["deny-critical-findings", "deny-unavailable-tools"]);
    expect(denied.findings.map((f) => f.code)).not.toContain("unknown_tool");
    expect(denied.findings).toContainEqual(
      expect.objectContaining({
        code: "tool_unavailable",
        message: "tools.down.anything cannot be checked: upstream 'down' is unavailable (Airlock could not connect to it); submit again once it answers",
      }),
    );
    await expect(runtime.broker.callTool("down", "anything", {}, signal)).rejects.toThrow(/upstream 'down' is unavailable/);
    // The direct lane says the same, and why is the operator's (the log), not the agent's.
    const agent = await agentNamed(`truster-${++agents}`);
    await expect(
      submitDirectCall({ ...runtime, db: db.prisma, startExecution: () => {} }, agent, { server: "down", tool: "anything", arguments: {} }),
    ).rejects.toMatchObject({
      message:
        "down.anything cannot be called: upstream 'down' is unavailable (Airlock could not connect to it; it is tried every 30 s). Nothing was called. Try again later, and tell the user if it persists.",
      next: "Try again later, and tell the user if it persists.",
    });
  });
});
