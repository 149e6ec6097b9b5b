/**
 * Starts what the browser tests run against: a throwaway PostgreSQL (migrated, demo-seeded with
 * a known password) and `next start` on E2E_PORT with the built app. Returns the teardown that
 * stops both. The seeded credentials reach the tests through e2e/.state.json.
 *
 * The database is prepared as `npm start` prepares the embedded one (lib/db/setup.ts), so the app
 * runs as the unprivileged app role; the state file's `databaseUrl` is the superuser's, for tests
 * that set up or tamper with data behind the app's back.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { FullConfig } from "@playwright/test";
import { startPostgres } from "../lib/db/postgres-server";
import { prepareEmbeddedDatabase } from "../lib/db/setup";
import { createPrismaClient } from "../lib/db";
import { seedDemo } from "../lib/demo/seed";

/** One file per run's port, so concurrent runs on one machine never read each other's state. */
export const STATE_FILE = join(import.meta.dirname, `.state-${process.env.E2E_PORT ?? "default"}.json`);

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { redirect: "manual" });
      if (res.status < 500) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`next start did not answer at ${url} within ${timeoutMs} ms`);
}

export default async function globalSetup(config: FullConfig) {
  const baseURL = config.projects[0]?.use.baseURL ?? "http://127.0.0.1:3100";
  const port = new URL(baseURL).port;
  const postgres = await startPostgres({ persistent: false });
  const { appUrl } = await prepareEmbeddedDatabase(postgres);
  const password = randomBytes(12).toString("base64url");
  const db = createPrismaClient(appUrl);
  const credentials = await seedDemo(db, { password });
  await db.$disconnect();
  if (!credentials) throw new Error("seeding the e2e database did nothing");
  const dataDir = await mkdtemp(join(tmpdir(), "airlock-e2e-data-"));
  await writeFile(STATE_FILE, JSON.stringify({ databaseUrl: postgres.url, dataDir, credentials }), { mode: 0o600 });

  const nextBin = createRequire(import.meta.url).resolve("next/dist/bin/next");
  const server = spawn(process.execPath, [nextBin, "start", "-p", port, "-H", "127.0.0.1"], {
    cwd: join(import.meta.dirname, ".."),
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      NODE_ENV: "production",
      DATABASE_URL: appUrl,
      AUTH_SECRET: randomBytes(32).toString("base64url"),
      AIRLOCK_LOGIN_MAX_FAILURES: "3",
      // The whole suite submits as the one demo agent and leaves many runs waiting for review.
      AIRLOCK_BUDGET_PENDING_REVIEWS: "200",
      AIRLOCK_DATA_DIR: dataDir,
      // One line per run change (lib/log.ts) would drown the report; e2e/start.spec.ts reads them from `npm start`.
      AIRLOCK_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
  });
  try {
    await waitForHttp(`${baseURL}/login`, 60_000);
  } catch (error) {
    if (server.pid) process.kill(-server.pid, "SIGKILL");
    await postgres.stop();
    throw error;
  }

  return async () => {
    if (server.pid && server.exitCode === null) {
      process.kill(-server.pid, "SIGTERM");
      await new Promise((done) => {
        const timer = setTimeout(() => {
          try {
            if (server.pid) process.kill(-server.pid, "SIGKILL");
          } catch {
            /* gone */
          }
          done(null);
        }, 5_000);
        server.once("exit", () => {
          clearTimeout(timer);
          done(null);
        });
      });
    }
    await postgres.stop();
  };
}
