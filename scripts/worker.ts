/**
 * `npm run worker`: an executor process. Takes queued runs from the PostgreSQL job queue and runs
 * them in the sandbox; start as many as you like, on any hosts that reach the database — they
 * coordinate only through PostgreSQL. SIGTERM / Ctrl-C drains: no new runs are taken, runs in
 * flight finish (or, past the drain time, fail explicitly with EXECUTOR_LOST), then it exits.
 * At start it probes the sandbox and prints the isolation level it runs at; when the configured
 * level cannot be met (and `sandbox.allowDegraded` is not set) it refuses with one line, exit 1.
 * A PostgreSQL restart does not end it: the queue reconnects, and a job completion lost with the
 * connection is logged (lib/runs/queue.ts `surviveConnectionLoss`).
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { runningEmbeddedUrl } from "@/lib/cli/database";
import { createPrismaClient } from "@/lib/db";
import { env, EnvError } from "@/lib/env";
import { describeIsolation } from "@/lib/runs/isolation";
import { createRuntime, resolveConfig } from "@/lib/runs/runtime";
import { surviveConnectionLoss } from "@/lib/runs/queue";
import { startTracing, stopTracing } from "@/lib/tracing-sdk";

async function main() {
  let config;
  try {
    config = env();
  } catch (error) {
    if (error instanceof EnvError) {
      console.error(`airlock worker: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const databaseUrl = config.DATABASE_URL ?? (await runningEmbeddedUrl(resolve(config.AIRLOCK_DATA_DIR)));
  if (!databaseUrl) {
    console.error("airlock worker: set DATABASE_URL to the database the web app uses (or run `npm start` here first).");
    process.exit(1);
  }
  await startTracing("airlock-worker");
  surviveConnectionLoss();
  const db = createPrismaClient(databaseUrl);
  const executorId = `worker-${hostname()}-${process.pid}`;
  const runtime = await createRuntime(db, resolveConfig(), { databaseUrl, execute: true, executorId });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.log("airlock worker: draining…");
    await runtime.close();
    await db.$disconnect();
    await stopTracing().catch((error: unknown) => console.error("airlock worker: exporting the last spans failed:", error));
    console.log("airlock worker: stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  // Ready only once a SIGTERM drains: one sent the moment this line appears must not kill the process outright.
  console.log(describeIsolation(runtime.sandbox));
  console.log(`airlock worker ${executorId} ready (isolation ${runtime.sandbox.level}, ${runtime.config.sandbox.poolSize} at a time)`);
}

main().catch((error) => {
  console.error(`airlock worker: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
