/**
 * The wiring of the fault tests (lib/runs/faults-*.test.ts): real processes to kill and a durable
 * upstream to count effects on.
 *
 * - `seedFaultDatabase(db)`: an admin owner, a policy set that allows every run without review
 *   (faults are about execution, not about review: a write runs at once, with no plan preview),
 *   and one agent with its bearer token;
 * - `writeFaultConfig(dir)`: an airlock.config.json with the demo ledger upstream over stdio and a
 *   strict sandbox pool; the ledger keeps its state in a JSON file it rewrites after every write,
 *   so `ledgerEffects(stateFile, marker)` counts what the upstream really did (reminder emails in
 *   its outbox, refunds), across every process that ever ran it;
 * - `spawnAirlock(script, env)`: `scripts/worker.ts` (or lib/testing/web-process.ts) as its own
 *   process group, started as `npm run worker` starts it (node --conditions=react-server with
 *   tsx); `kill()` SIGKILLs the whole group (the process, its upstreams, its sandboxes), as a
 *   crashed container would be;
 * - `startSubmitter(db, url, config)`: a runtime in the test's process that analyses, decides and
 *   enqueues, and never executes (the killed or starved processes do);
 * - `auditVerifies(db)`: lib/audit/verify.ts over the whole chain.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { childProcessEnv } from "@/lib/env";
import { verifyAuditChain, type VerifyReport } from "@/lib/audit/verify";
import { publishPolicyText } from "@/lib/policy/store";
import { createRuntime, demoConfig, type Runtime } from "@/lib/runs/runtime";
import type { AgentActor } from "@/lib/runs/service";

/** The terminal run states (lib/contracts/run-states.ts), as plain strings to compare statuses with. */
export const TERMINAL: readonly string[] = TERMINAL_STATUSES;

/** Every run is allowed: no reviewer, no plan preview. Critical findings are still denied. */
export const ALLOW_ALL_POLICY = `@id("fault-tests-allow-all")
@reason("Fault tests: every run is allowed, so writes execute at once.")
permit (principal, action in [Action::"run", Action::"call"], resource);

@id("deny-critical-findings")
@reason("Analysis found critical problems.")
forbid (principal, action in [Action::"run", Action::"call"], resource)
when { resource.criticalFindings > 0 };
`;

export async function seedFaultDatabase(db: Db, agentName = "faults"): Promise<{ agent: AgentActor; token: string }> {
  const system: Actor = { type: "system", name: "test" };
  await db.$transaction(async (tx) => {
    await createUser(tx, system, { email: "owner@example.com", role: "admin" });
    await publishPolicyText(tx, system, ALLOW_ALL_POLICY);
  });
  const created = await db.$transaction((tx) => createAgent(tx, system, { name: agentName, ownerEmail: "owner@example.com" }));
  const { ownerId } = await db.agent.findUniqueOrThrow({ where: { id: created.agentId } });
  return { agent: { type: "agent", id: created.agentId, name: agentName, ownerId, scopes: created.scopes }, token: created.token };
}

export type FaultConfig = { configFile: string; stateFile: string };

export async function writeFaultConfig(dir: string, poolSize = 2): Promise<FaultConfig> {
  const stateFile = join(dir, "ledger-state.json");
  const configFile = join(dir, "airlock.config.json");
  const ledger = demoConfig(stateFile).servers.ledger!;
  await writeFile(configFile, JSON.stringify({ servers: { ledger }, sandbox: { isolation: "strict", poolSize } }));
  return { configFile, stateFile };
}

type LedgerState = { outbox?: { message: string }[]; refunds?: { reason: string }[] };

/** What the ledger did for messages/reasons containing `marker`, read from its durable state. */
export function ledgerEffects(stateFile: string, marker: string): string[] {
  let state: LedgerState;
  try {
    state = JSON.parse(readFileSync(stateFile, "utf8")) as LedgerState;
  } catch {
    return []; // no write yet: the ledger writes its file on the first one
  }
  return [...(state.outbox ?? []).map((m) => m.message), ...(state.refunds ?? []).map((r) => r.reason)].filter((text) => text.includes(marker));
}

/** Submits and enqueues through the same config the workers run; executes nothing. */
export function startSubmitter(db: Db, databaseUrl: string, config: FaultConfig): Promise<Runtime> {
  return createRuntime(db, { ...demoConfig(config.stateFile), sandbox: { isolation: "strict", poolSize: 1 } }, { databaseUrl, execute: false });
}

export type AirlockProcess = {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** SIGKILLs its process group; resolves when it is gone. */
  kill(): Promise<void>;
};

/** Starts `script` (relative to the repository) the way `npm run worker` does; ready when it prints `readyLine`. */
export function spawnAirlock(script: string, env: Record<string, string>, readyLine = "ready"): AirlockProcess {
  const child = spawn(process.execPath, ["--conditions=react-server", "--disable-sigusr1", "--import", "tsx", script], {
    cwd: process.cwd(),
    env: { ...childProcessEnv(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyLine)) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then(({ code, signal }) => reject(new Error(`${script} exited (${code ?? signal}) before it was ready:\n${output}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    ready,
    exited,
    output: () => output,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
      await exited;
    },
  };
}

/** Polls `probe` until it returns a value that is not undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export async function auditVerifies(db: Db): Promise<VerifyReport> {
  return verifyAuditChain(db, { checkpoints: null });
}
