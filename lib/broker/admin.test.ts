/**
 * Quarantine and acceptance against the real ledger upstream with pins in PostgreSQL: a tool whose
 * definition no longer matches its pin is refused until an admin accepts exactly the definition
 * they saw; the acceptance reaches a broker in another process through the database.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { demoConfig } from "@/lib/runs/runtime";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { acceptTool } from "./admin";
import { ToolBroker } from "./broker";
import { DbPinStore, syncRegistry, upsertServers } from "./db-registry";

const admin: Actor = { type: "system", name: "test-admin" };
let db: TestDatabase;
let broker: ToolBroker;

beforeAll(async () => {
  db = await createTestDatabase();
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

  it("refuses acceptance by a reviewer and of a definition the admin did not see", async () => {
    const reviewer: Actor = { type: "user", id: "00000000-0000-4000-8000-000000000001", email: "r@x", role: "reviewer" };
    const current = broker.tool("ledger", "listInvoices")!.hash;
    await expect(acceptTool(db.prisma, reviewer, { server: "ledger", tool: "listInvoices", schemaHash: current })).rejects.toMatchObject({ code: "forbidden" });
    await expect(acceptTool(db.prisma, admin, { server: "ledger", tool: "listInvoices", schemaHash: "f".repeat(64) })).rejects.toMatchObject({
      code: "conflict",
    });
    await expect(acceptTool(db.prisma, admin, { server: "ledger", tool: "listRefunds", schemaHash: current })).rejects.toMatchObject({ code: "conflict" });
  });

  it("accepting re-pins the tool, is audited, and reaches a broker that still has it quarantined", async () => {
    const current = broker.tool("ledger", "listInvoices")!.hash;
    await acceptTool(db.prisma, admin, { server: "ledger", tool: "listInvoices", schemaHash: current });
    const row = await db.prisma.upstreamTool.findFirstOrThrow({ where: { name: "listInvoices" } });
    expect(row).toMatchObject({ quarantined: false, pinnedHash: current });
    expect(row.pinnedDefinition).toMatchObject({ description: row.description });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "tool.accepted" } });
    expect(event.data).toMatchObject({ previousHash: "0".repeat(64), acceptedHash: current });
    // This broker never heard of the acceptance; the pin in the database is the source of truth.
    const result = (await broker.callTool("ledger", "listInvoices", { limit: 1 }, new AbortController().signal)) as { invoices: unknown[] };
    expect(result.invoices).toHaveLength(1);
    expect(broker.tool("ledger", "listInvoices")?.quarantined).toBe(false);
  });
});
