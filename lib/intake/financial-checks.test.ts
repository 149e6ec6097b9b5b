/**
 * The shipped rule for reads of financial data, through intake on real parts (PostgreSQL, the demo
 * ledger over stdio, analysis, the shipped policies), with a test config that classes the ledger's
 * read tool listInvoices as financial (the demo classes no read tool so): a script that declares no
 * checks.sum or checks.rowCount escalates with the rule's reason; one that does loses that reason.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { parseConfig } from "@/lib/broker/config";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { submitRun } from "./submit";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let runtime: Runtime;
let agent: AgentActor;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "finance-bot", ownerEmail: "owner@example.com" }));
  const { ownerId } = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  agent = { type: "agent", id: created.agentId, name: "finance-bot", ownerId, scopes: created.scopes };
  const demo = demoConfig(join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json"));
  const ledger = demo.servers.ledger!;
  const config = parseConfig(
    {
      servers: {
        ledger: {
          transport: "stdio",
          command: ledger.transport === "stdio" ? ledger.command : "",
          args: ledger.transport === "stdio" ? ledger.args : [],
          dataClass: "internal",
          tools: { listInvoices: { dataClass: "financial" } },
        },
      },
    },
    join(tmpdir(), "airlock.config.json"),
  );
  runtime = await createRuntime(db.prisma, config, { databaseUrl: db.url, execute: false });
}, 60_000);
afterAll(async () => {
  await runtime?.close();
  await db?.drop();
});

const reasons = (view: { reasons: { policyId: string }[] }) => view.reasons.map((r) => r.policyId);
const provenance = { model: "m", prompt: "p" };

describe("reads of financial data", () => {
  it("without a sum or rowCount check: escalated, with the reason naming what to declare", async () => {
    const view = await submitRun(runtime, agent, {
      code: `const { invoices } = await tools.ledger.listInvoices({ limit: 10 });\nreturn invoices.length;`,
      purpose: "count invoices",
      language: "javascript",
      provenance,
    });
    expect(view.decision).toBe("escalate");
    expect(reasons(view)).toContain("review-financial-read-unchecked");
  });

  it("with a checks.sum on what it read: that reason is gone (the data is still regulated, so people still review it)", async () => {
    const view = await submitRun(runtime, agent, {
      code: `const { invoices } = await tools.ledger.listInvoices({ limit: 10 });\nconst total = invoices.reduce((s, i) => s + i.amountMinor, 0);\nawait checks.sum("total", invoices, "amountMinor", total);\nreturn total;`,
      purpose: "sum invoices",
      language: "javascript",
      provenance,
    });
    expect(reasons(view)).not.toContain("review-financial-read-unchecked");
    expect(reasons(view)).toContain("review-regulated-data");
    const row = await db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(row.facts).toMatchObject({ readOnlyDataClasses: ["financial"], checks: ["sum"] });
  });
});
