/**
 * The process-wide pieces a web process (or worker) needs to take runs end to end: the tool
 * broker connected to the configured upstreams (pins and registry in PostgreSQL), a warm sandbox
 * pool at the configured isolation level, and an in-process executor.
 *
 * Configuration: AIRLOCK_CONFIG, else ./airlock.config.json, else the built-in demo configuration
 * (the `ledger` upstream from lib/demo/ledger, its state kept under AIRLOCK_DATA_DIR). A config
 * file that exists but is invalid is an error, never silently replaced by the demo.
 *
 * Created once per process on first use (cached on globalThis for Next's dev reloads).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import type { Db } from "@/lib/db";
import { env } from "@/lib/env";
import { loadConfig, parseConfig, ToolBroker, type AirlockConfig } from "@/lib/broker";
import { DbPinStore, syncRegistry, upsertServers } from "@/lib/broker/db-registry";
import { ALLOWED_BUILTINS, createSandboxPool, type SandboxPool } from "@/lib/sandbox";
import { executeRun } from "./executor";
import type { RunDeps } from "./service";

export type Runtime = RunDeps & { broker: ToolBroker; pool: SandboxPool; config: AirlockConfig; close(): Promise<void> };

/** The demo upstream, used when no config file exists. */
export function demoConfig(stateFile = join(resolve(env().AIRLOCK_DATA_DIR), "ledger-state.json")): AirlockConfig {
  const root = process.cwd();
  const tsx = createRequire(join(root, "package.json")).resolve("tsx");
  return parseConfig(
    {
      servers: {
        ledger: {
          transport: "stdio",
          command: process.execPath,
          args: ["--import", tsx, join(root, "lib/demo/ledger/server.ts"), "--state", stateFile],
          // Invoices and refunds are internal; people and money movements are regulated.
          dataClass: "internal",
          tools: {
            listCustomers: { dataClass: "pii" },
            getCustomer: { dataClass: "pii" },
            updateCustomerEmail: { dataClass: "pii" },
            sendReminderEmail: { dataClass: "pii" },
            issueRefund: { dataClass: "financial" },
          },
        },
      },
    },
    join(root, "airlock.config.json"),
  );
}

export function resolveConfig(): AirlockConfig {
  const configured = env().AIRLOCK_CONFIG;
  if (configured || existsSync(resolve("airlock.config.json"))) return loadConfig(configured);
  return demoConfig();
}

export async function createRuntime(db: Db, config: AirlockConfig, executorId = `web-${process.pid}`): Promise<Runtime> {
  await upsertServers(db, config);
  const broker = await ToolBroker.connect(config, { pins: new DbPinStore(db) });
  await syncRegistry(db, broker.tools());
  const pool = createSandboxPool({ size: config.sandbox.poolSize, isolation: config.sandbox.isolation, packages: config.packages });
  const allowedImports = [...config.packages, ...ALLOWED_BUILTINS];
  const running = new Set<Promise<unknown>>();
  const runtime: Runtime = {
    db,
    broker,
    pool,
    config,
    registry: {
      toolFacts: () => broker.tools().map(({ server, name, annotations, dataClass, quarantined }) => ({ server, name, annotations, dataClass, quarantined })),
      declarations: () => broker.declarations(),
      allowedImports: () => allowedImports,
    },
    startExecution(runId) {
      const job = executeRun({ db, executorId, callTool: broker.callTool, runScript: (request) => pool.run(request) }, runId)
        .catch((error: unknown) => console.error(`run ${runId}: executor failed`, error))
        .finally(() => running.delete(job));
      running.add(job);
    },
    async close() {
      await Promise.allSettled(running);
      await pool.close();
      await broker.close();
    },
  };
  return runtime;
}

const cache = globalThis as typeof globalThis & { __airlockRuntime?: Promise<Runtime> };

/** The web process's runtime, created on first use. A failed start is retried on the next call. */
export function appRuntime(db: Db): Promise<Runtime> {
  cache.__airlockRuntime ??= createRuntime(db, resolveConfig()).catch((error: unknown) => {
    cache.__airlockRuntime = undefined;
    throw error;
  });
  return cache.__airlockRuntime;
}
