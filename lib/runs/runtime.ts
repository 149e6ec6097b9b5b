/**
 * The process-wide pieces a web process (or worker) needs to take runs end to end: the tool
 * broker connected to the configured upstreams (pins and registry in PostgreSQL) and, when this
 * process executes runs, a warm sandbox pool at the isolation level the host provides (the
 * configured one, or permission-only when allowed to degrade: lib/runs/isolation.ts, which refuses
 * otherwise) and a run-queue worker (lib/runs/queue.ts). A process that does not execute only enqueues.
 *
 * Configuration: AIRLOCK_CONFIG, else ./airlock.config.json, else the built-in demo configuration
 * (the `ledger` upstream from lib/demo/ledger, its state kept under AIRLOCK_DATA_DIR). A config
 * file that exists but is invalid is an error, never silently replaced by the demo.
 *
 * Created once per process on first use (cached on globalThis for Next's dev reloads).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import type { Db } from "@/lib/db";
import { env } from "@/lib/env";
import { loadConfig, parseConfig, ToolBroker, UNAVAILABLE_RETRY_MS, type AirlockConfig } from "@/lib/broker";
import { applyOverrides, DbPinStore, syncRegistry, upsertServers } from "@/lib/broker/db-registry";
import { ALLOWED_BUILTINS, createSandboxPool, type SandboxPool } from "@/lib/sandbox";
import { quickAddJob, runMigrations as migrateQueue } from "graphile-worker";
import { notifyEscalation } from "./notify";
import { checkIsolation, type IsolationCheck } from "./isolation";
import { listenRunChanges, type RunChanges } from "./run-changes";
import { listenTokenChanges, type TokenCache } from "@/lib/auth/token-cache";
import { listenSettingsChanges } from "@/lib/db/remembered";
import { startAuditSequencer } from "@/lib/audit/sequencer";
import { EXECUTE_RUN, PREVIEW_RUN, startRunQueue, type MaintenanceOptions, type RunQueue } from "./queue";
import { quietQueueLogger } from "@/lib/db/queue-logger";
import type { RunDeps } from "./service";

export type Runtime = RunDeps & { broker: ToolBroker; config: AirlockConfig; sandbox: IsolationCheck; tokens: TokenCache; close(): Promise<void> };

export type RuntimeOptions = {
  databaseUrl: string;
  /** Execute runs in this process (npm start, `npm run worker`); otherwise only enqueue them. */
  execute: boolean;
  executorId?: string;
  maintenance?: MaintenanceOptions;
  drainMs?: number;
};

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
          // Invoices and refunds are internal; people and money movements are regulated. The model
          // sees customers' names and addresses as tokens (lib/runs/pii-tokens.ts).
          dataClass: "internal",
          tools: {
            listCustomers: { dataClass: "pii", piiFields: { "customers[].email": "EMAIL", "customers[].name": "NAME" } },
            getCustomer: { dataClass: "pii", piiFields: { "customer.email": "EMAIL", "customer.name": "NAME" } },
            updateCustomerEmail: { dataClass: "pii", piiFields: { email: "EMAIL", "customer.email": "EMAIL", "customer.name": "NAME" } },
            sendReminderEmail: { dataClass: "pii", piiFields: { to: "EMAIL" } },
            issueRefund: { dataClass: "financial" },
          },
        },
      },
    },
    join(root, "airlock.config.json"),
  );
}

/** The file the server's configuration comes from: AIRLOCK_CONFIG, else ./airlock.config.json when it exists; null for the demo. */
export function serverConfigPath(): string | null {
  const configured = env().AIRLOCK_CONFIG;
  if (configured) return resolve(configured);
  const local = resolve("airlock.config.json");
  return existsSync(local) ? local : null;
}

export function resolveConfig(): AirlockConfig {
  const path = serverConfigPath();
  return path ? loadConfig(path) : demoConfig();
}

/** How often the runtime looks for an unavailable upstream whose retry is due (the broker spaces the retries) and for changed tool lists. */
const RETRY_CHECK_MS = 5_000;

/**
 * What the runtime does every RETRY_CHECK_MS: tries the unavailable upstreams that are due, lists
 * again those that said their tools changed, and mirrors into the registry the tools of those that
 * came back or changed (a mirror that fails is tried again at the next check, so their rows are
 * never left missing; a tool an upstream stops listing keeps its row, as across a restart).
 */
function upstreamRetry(db: Db, broker: ToolBroker): () => Promise<void> {
  const pending = new Map<string, string>();
  return async () => {
    try {
      for (const server of await broker.retryUnavailable()) pending.set(server, "answers again");
      for (const server of await broker.relistChanged()) pending.set(server, "changed its tools");
      if (pending.size === 0) return;
      await syncRegistry(db, broker.tools());
      for (const [server, what] of pending) {
        const tools = broker.tools(server);
        const quarantined = tools.filter((tool) => tool.quarantined).length;
        console.warn(
          `airlock: upstream '${server}' ${what}: ${tools.length} tool(s)${quarantined > 0 ? `, ${quarantined} quarantined until two admins accept them` : ""}.`,
        );
        // A misspelt `tools` key of an upstream that was down at start is seen only now (once: a relist does not repeat it).
        if (what === "answers again") {
          for (const line of broker.unmatchedToolSettings().filter((l) => l.startsWith(`servers.${server}.tools.`))) console.warn(`airlock: warning: ${line}.`);
        }
      }
      pending.clear();
    } catch (error) {
      console.error("airlock: retrying the unavailable upstreams failed (tried again shortly)", error);
    }
  };
}

export async function createRuntime(db: Db, config: AirlockConfig, options: RuntimeOptions): Promise<Runtime> {
  // Refuses (IsolationUnavailable) before anything starts when the configured level cannot be met.
  const sandbox = await checkIsolation(config.sandbox, { execute: options.execute });
  await upsertServers(db, config);
  // An upstream that is down does not keep the others from agents: it is unavailable, and tried again.
  const broker = await ToolBroker.connect(config, { pins: new DbPinStore(db), partial: true });
  const allowedImports = [...config.packages, ...ALLOWED_BUILTINS];
  let pool: SandboxPool | null = null;
  let queue: RunQueue | null = null;
  // Pushed run changes; set once the start succeeded, before any wait can arm (runs the queue ends
  // earlier have nobody in this process waiting for them).
  let changes: RunChanges | null = null;
  // Settings remembered until they change: the published policy (intake, release decisions) and skills (search_tools).
  const remembered = listenSettingsChanges(options.databaseUrl);
  try {
    await syncRegistry(db, broker.tools());
    // The queue's own schema (graphile_worker) is installed by the migrate step, as the owner
    // (lib/db/setup.ts); here graphile-worker checks it is current, which the app role may read.
    await migrateQueue({ connectionString: options.databaseUrl, logger: quietQueueLogger }).catch((error: unknown) => {
      if ((error as { code?: string }).code !== "42501") throw error;
      throw new Error(
        "The job queue's schema (graphile_worker) is missing or out of date, and this role may not install it; run `npx airlock db migrate` as the owner (AIRLOCK_MIGRATION_DATABASE_URL).",
        { cause: error },
      );
    });
    if (options.execute) {
      const sandboxPool = createSandboxPool({ size: config.sandbox.poolSize, isolation: sandbox.level, packages: config.packages });
      pool = sandboxPool;
      queue = await startRunQueue({
        databaseUrl: options.databaseUrl,
        db,
        concurrency: Math.max(1, config.sandbox.poolSize),
        drainMs: options.drainMs,
        maintenance: options.maintenance,
        retention: config.retention.days,
        executor: {
          executorId: options.executorId ?? `${hostname()}-${process.pid}`,
          isolation: sandbox.level,
          callTool: broker.callTool,
          runScript: (request) => sandboxPool.run(request),
          tool: (server, name) => broker.tool(server, name),
          argumentsProblem: (server, name, args, ignore) => broker.argumentsProblem(server, name, args, ignore),
          onPendingReview: (runId) => notifyEscalation(runId, db),
          handOver: (run) => changes?.handOver(run),
          remembered,
        },
      });
    }
  } catch (error) {
    // A failed start leaves nothing running (the web process retries it on its next request).
    await pool?.close().catch((closing: unknown) => console.error("closing the sandbox pool of a failed start failed", closing));
    await broker.close();
    await remembered.close();
    throw error;
  }
  for (const [server, reason] of broker.unavailableServers()) {
    console.warn(
      `airlock: upstream '${server}' is unavailable (${reason}); its tools are offered once it answers (tried every ${UNAVAILABLE_RETRY_MS / 1000} s).`,
    );
  }
  for (const line of broker.unmatchedToolSettings()) console.warn(`airlock: warning: ${line}.`);
  const retry = upstreamRetry(db, broker);
  const retrying = setInterval(() => void retry(), RETRY_CHECK_MS).unref();
  changes = listenRunChanges(options.databaseUrl);
  const tokens = listenTokenChanges(options.databaseUrl);
  /** A job for another process's queue, when this one does not execute. */
  const addJob = (task: string, jobKey: string, runId: string) =>
    quickAddJob({ connectionString: options.databaseUrl, logger: quietQueueLogger }, task, { runId }, { jobKey, maxAttempts: 3 }).then(() => undefined);
  const auditSequencer = startAuditSequencer(db);
  const runtime: Runtime = {
    db,
    changes,
    broker,
    config,
    sandbox,
    tokens,
    remembered,
    isolation: sandbox.level,
    registry: {
      toolFacts: () =>
        broker.tools().map(({ server, name, annotations, dataClass, quarantined, quarantineReason, inputSchema }) => ({
          server,
          name,
          annotations,
          dataClass,
          quarantined,
          quarantineReason,
          inputSchema,
        })),
      declarations: () => broker.declarations(),
      unavailableServers: () => [...broker.unavailableServers().keys()],
      allowedImports: () => allowedImports,
      // What admins decided in another process: confirmed overrides, and acceptances of quarantined tools.
      refresh: async () => {
        await Promise.all([applyOverrides(db, broker.tools()), broker.refreshAcceptances()]);
      },
    },
    startExecution(runId) {
      // At once in an idle slot of this process, else a job. A lost enqueue is recovered by the
      // maintenance sweep, which re-enqueues stale queued runs.
      if (queue) queue.start(runId);
      else addJob(EXECUTE_RUN, `run:${runId}`, runId).catch((error: unknown) => console.error(`run ${runId}: enqueue failed`, error));
    },
    reserveStart: () => queue?.reserve() ?? null,
    startPreview(runId) {
      // A lost enqueue is recovered by the maintenance sweep, which re-enqueues lost previews.
      (queue ? queue.enqueuePreview(runId) : addJob(PREVIEW_RUN, `preview:${runId}`, runId)).catch((error: unknown) =>
        console.error(`run ${runId}: enqueueing its preview failed`, error),
      );
    },
    async close() {
      clearInterval(retrying);
      try {
        await queue?.stop();
        await pool?.close();
        await broker.close();
        await changes.close();
      } finally {
        // The listeners go whatever failed before them: a LISTEN connection left open keeps its process alive.
        await tokens.close();
        await remembered.close();
        await auditSequencer.close();
      }
    },
  };
  return runtime;
}

const cache = globalThis as typeof globalThis & { __airlockRuntime?: Promise<Runtime>; __airlockRuntimeReady?: Runtime };

/** The web process's runtime if it was started (at boot or by a request); never starts one. */
export function startedAppRuntime(): Promise<Runtime> | undefined {
  return cache.__airlockRuntime;
}

/**
 * The started runtime's pushed run changes, which end a wait for a run at once. Reading or
 * cancelling a run never starts a runtime (an upstream down would hold every read); without one,
 * waits poll.
 */
export async function startedRunChanges(): Promise<RunChanges | undefined> {
  return startedAppRuntime()?.then(
    (runtime) => runtime.changes,
    () => undefined,
  );
}

/**
 * The started runtime's remembered agent tokens (lib/auth/token-cache.ts), once the runtime is up;
 * never waits for it or starts it: until then every token is read.
 */
export function readyTokenCache(): TokenCache | undefined {
  return cache.__airlockRuntimeReady?.tokens;
}

/** The web process's runtime, created on first use. A failed start is retried on the next call. */
export function appRuntime(db: Db): Promise<Runtime> {
  const config = env();
  if (!config.DATABASE_URL) throw new Error("DATABASE_URL is not set");
  cache.__airlockRuntime ??= createRuntime(db, resolveConfig(), {
    databaseUrl: config.DATABASE_URL,
    execute: config.AIRLOCK_IN_PROCESS_WORKER,
    executorId: `web-${hostname()}-${process.pid}`,
    // Shorter than npm start's 45 s stop timeout, so runs past it still get their terminal state.
    drainMs: 30_000,
  }).then(
    (runtime) => (cache.__airlockRuntimeReady = runtime),
    (error: unknown) => {
      cache.__airlockRuntime = undefined;
      throw error;
    },
  );
  return cache.__airlockRuntime;
}
