/**
 * Quarantine and acceptance against the real ledger upstream with pins in PostgreSQL: a tool whose
 * definition no longer matches its pin is refused until two different admins accept exactly the
 * definition they saw (one alone only asks); the acceptance reaches a broker in another process
 * through the database.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { demoConfig } from "@/lib/runs/runtime";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { acceptTool } from "./admin";
import { ToolBroker } from "./broker";
import { DbPinStore, syncRegistry, upsertServers } from "./db-registry";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let broker: ToolBroker;
let ada: Extract<Actor, { type: "user" }>;
let alan: Extract<Actor, { type: "user" }>;

async function admin(email: string): Promise<Extract<Actor, { type: "user" }>> {
  const user = await db.prisma.$transaction((tx) => createUser(tx, system, { email, role: "admin" }));
  return { type: "user", ...user };
}

beforeAll(async () => {
  db = await createTestDatabase();
  ada = await admin("ada@example.com");
  alan = await admin("alan@example.com");
  const config = demoConfig(join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json"));
  await upsertServers(db.prisma, config);
  const pins = new DbPinStore(db.prisma);
  // An earlier definition of listInvoices was pinned; the upstream now serves another one.
  await pins.set("ledger", "listInvoices", "0".repeat(64));
  broker = await ToolBroker.connect(config, { pins });
  await syncRegistry(db.prisma, broker.tools());
}, 60_000);

afterAll(async () => {
  await broker?.close();
  await db?.drop();
});

describe("tool quarantine", () => {
  it("quarantines a tool whose definition changed and refuses calls to it", async () => {
    expect(broker.tool("ledger", "listInvoices")).toMatchObject({ quarantined: true, quarantineReason: "hash_changed" });
    expect(broker.tool("ledger", "listRefunds")?.quarantined).toBe(false);
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ quarantined: true, pinnedHash: "0".repeat(64) });
    await expect(broker.callTool("ledger", "listInvoices", { limit: 1 }, new AbortController().signal)).rejects.toThrow(/quarantined/);
  });

  it("refuses acceptance by a reviewer, by a system actor, and of a definition the admin did not see", async () => {
    const reviewer: Actor = { type: "user", id: "00000000-0000-4000-8000-000000000001", email: "r@x", role: "reviewer" };
    const current = broker.tool("ledger", "listInvoices")!.hash;
    const accept = (actor: Actor, tool: string, schemaHash: string) => acceptTool(db.prisma, actor, { server: "ledger", tool, schemaHash });
    await expect(accept(reviewer, "listInvoices", current)).rejects.toMatchObject({ code: "forbidden", details: { scope: "tools:manage" } });
    await expect(accept(system, "listInvoices", current)).rejects.toMatchObject({ code: "forbidden", details: { reason: "person_required" } });
    await expect(accept(ada, "listInvoices", "f".repeat(64))).rejects.toMatchObject({ code: "conflict" });
    await expect(accept(ada, "listRefunds", current)).rejects.toMatchObject({ code: "conflict" });
    expect(await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } })).toMatchObject({ acceptanceRequestedHash: null });
  });

  it("one admin alone cannot accept: the first acceptance only asks, the same admin's second is refused, calls stay refused", async () => {
    const current = broker.tool("ledger", "listInvoices")!.hash;
    const input = { server: "ledger", tool: "listInvoices", schemaHash: current };
    expect(await acceptTool(db.prisma, ada, input)).toEqual({ server: "ledger", tool: "listInvoices", outcome: "requested" });
    await expect(acceptTool(db.prisma, ada, input)).rejects.toMatchObject({ code: "forbidden", details: { reason: "own_request" } });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ quarantined: true, pinnedHash: "0".repeat(64), acceptanceRequestedHash: current, acceptanceRequestedById: ada.id });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "tool.acceptance_requested" } });
    expect(event).toMatchObject({ actorId: ada.id, data: { requestedHash: current, pinnedHash: "0".repeat(64) } });
    await expect(broker.callTool("ledger", "listInvoices", { limit: 1 }, new AbortController().signal)).rejects.toThrow(/quarantined/);
  });

  it("a request for another definition counts for nothing: the next acceptance only asks again", async () => {
    const current = broker.tool("ledger", "listInvoices")!.hash;
    await db.prisma.upstreamTool.updateMany({ where: { name: "listInvoices" }, data: { acceptanceRequestedHash: "e".repeat(64) } });
    expect(await acceptTool(db.prisma, alan, { server: "ledger", tool: "listInvoices", schemaHash: current })).toMatchObject({ outcome: "requested" });
    expect(await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } })).toMatchObject({
      quarantined: true,
      acceptanceRequestedHash: current,
      acceptanceRequestedById: alan.id,
    });
  });

  it("a second admin's acceptance re-pins the tool, is audited naming both, and reaches a broker that still has it quarantined", async () => {
    const current = broker.tool("ledger", "listInvoices")!.hash;
    expect(await acceptTool(db.prisma, ada, { server: "ledger", tool: "listInvoices", schemaHash: current })).toMatchObject({ outcome: "accepted" });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ quarantined: false, pinnedHash: current, acceptanceRequestedHash: null, acceptanceRequestedById: null });
    expect(row.pinnedDefinition).toMatchObject({ description: row.description });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "tool.accepted", actorType: "user" } });
    expect(event).toMatchObject({ actorId: ada.id, data: { previousHash: "0".repeat(64), acceptedHash: current, requestedById: alan.id, newTool: false } });
    expect(row).toMatchObject({ acceptedBy: [alan.email, ada.email], acceptedAt: expect.any(Date) });
    // This broker never heard of the acceptance; the pin in the database is the source of truth.
    const result = (await broker.callTool("ledger", "listInvoices", { limit: 1 }, new AbortController().signal)) as { invoices: unknown[] };
    expect(result.invoices).toHaveLength(1);
    expect(broker.tool("ledger", "listInvoices")?.quarantined).toBe(false);
  });
});
