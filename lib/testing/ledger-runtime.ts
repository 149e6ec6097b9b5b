/**
 * For tests that run scripts end to end: a fresh test database with an admin owner and the shipped
 * policies published, one agent, and a runtime that executes (the demo ledger over stdio, its own
 * state file, a strict sandbox pool of one). `close()` stops the runtime and drops the database.
 * `ledger` edits the demo data before the ledger starts (an upstream's data, as a test needs it).
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { generateLedgerData, type LedgerData } from "@/lib/demo/ledger/data";
import { setEnvForChildren } from "@/lib/env";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";
import { createTestDatabase, type TestDatabase } from "./db";

export type LedgerRuntime = { db: TestDatabase; runtime: Runtime; agent: AgentActor; stateFile: string; close(): Promise<void> };

export async function startLedgerRuntime(agentName: string, options: { ledger?: (data: LedgerData) => void } = {}): Promise<LedgerRuntime> {
  const system: Actor = { type: "system", name: "test" };
  setEnvForChildren({ AIRLOCK_BUDGET_CONCURRENT_RUNS: "50" });
  const db = await createTestDatabase();
  await db.prisma.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, defaultPolicyText());
  });
  const created = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: agentName, ownerEmail: "owner@example.com" }));
  const { ownerId } = await db.prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  const agent: AgentActor = { type: "agent", id: created.agentId, name: agentName, ownerId, scopes: created.scopes };
  const stateFile = join(await mkdtemp(join(tmpdir(), "airlock-ledger-")), "state.json");
  if (options.ledger) {
    const data = generateLedgerData();
    options.ledger(data);
    await writeFile(stateFile, JSON.stringify({ ...data, idempotency: {}, outbox: [] }), { mode: 0o600 });
  }
  const runtime = await createRuntime(
    db.prisma,
    { ...demoConfig(stateFile), sandbox: { isolation: "strict", poolSize: 1 } },
    { databaseUrl: db.url, execute: true },
  );
  return {
    db,
    runtime,
    agent,
    stateFile,
    async close() {
      await runtime.close();
      await db.drop();
    },
  };
}
