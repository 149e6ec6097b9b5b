/**
 * `npm start` (and `npm run dev` with --dev): one command from a fresh clone to a running console.
 *
 *  1. validates the environment (lib/env.ts) and that PORT is free, reads airlock.config.json and
 *     probes the sandbox, printing the isolation level runs will use (`checkSandbox`); a level the
 *     host cannot meet (without `sandbox.allowDegraded`) refuses to start — each failure is one line, exit 1;
 *  2. uses DATABASE_URL if set (never starting its own), otherwise starts the embedded PostgreSQL
 *     under AIRLOCK_DATA_DIR (data kept between starts);
 *  3. applies migrations as the owner (the embedded superuser, or AIRLOCK_MIGRATION_DATABASE_URL)
 *     and grants the app role what it needs (lib/db/setup.ts); the app connects as that role —
 *     `airlock_app` for the embedded database — and a connection that could switch off the audit
 *     log's append-only triggers gets one warning line on stderr; seeds the demo on the first start
 *     and prints its logins and agent token;
 *  4. builds the app when no build exists or sources changed since the last one;
 *  5. serves it with `next start`, and on Ctrl-C / SIGTERM stops the server and the database,
 *     leaving no process behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { makeDirectory } from "@/lib/make-directory";
import { assertDatabaseReachable } from "@/lib/db/migrate";
import { checkpointConfigFromEnv } from "@/lib/audit/checkpoints";
import { signCheckpoint } from "@/lib/audit/service";
import { clusterDirFor, startPostgres, stopLeftoverServer, type PostgresServer } from "@/lib/db/postgres-server";
import { recordedStart } from "@/lib/cli/database";
import { privilegeWarning } from "@/lib/db/roles";
import { externalDatabaseUrls, migrateDatabase, prepareEmbeddedDatabase } from "@/lib/db/setup";
import { createPrismaClient } from "@/lib/db";
import { seedDemo, type DemoCredentials } from "@/lib/demo/seed";
import { env, EnvError, setEnvForChildren, childProcessEnv } from "@/lib/env";
import { ConfigError, type AirlockConfig } from "@/lib/broker/config";
import { checkIsolation, describeIsolation, IsolationUnavailable, type IsolationCheck } from "@/lib/runs/isolation";
import { resolveConfig } from "@/lib/runs/runtime";
import type { HostFacts } from "@/lib/sandbox/host";

const dev = process.argv.includes("--dev");
const root = resolve(import.meta.dirname, "..");
const nextBin = createRequire(import.meta.url).resolve("next/dist/bin/next");
const EXIT_WITH_PARENT = new URL("./exit-with-parent.mjs", import.meta.url).href;
/** How long the web server may take to let runs in flight finish after Ctrl-C / SIGTERM. */
const DRAIN_MS = 45_000;

function fail(message: string): never {
  console.error(`airlock: ${message}`);
  process.exit(1);
}

async function assertPortFree(port: number, host: string): Promise<void> {
  await new Promise<void>((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, host, () => server.close(() => resolvePort()));
  }).catch((error: NodeJS.ErrnoException) => {
    fail(
      error.code === "EADDRINUSE"
        ? `PORT ${port} is already in use on ${host}; stop what is using it or set PORT to a free port.`
        : `cannot listen on ${host}:${port} (${error.code ?? error.message}); check PORT and AIRLOCK_HOST.`,
    );
  });
}

/**
 * Probes the sandbox the web process's runs will use (`execute`: it runs them itself) and prints
 * the isolation level; when the configured level cannot be met, refuses with one line, exit 1.
 */
export async function checkSandbox(sandbox: AirlockConfig["sandbox"], execute: boolean, probe?: () => Promise<HostFacts>): Promise<IsolationCheck> {
  try {
    const check = await checkIsolation(sandbox, { execute, probe });
    console.log(describeIsolation(check));
    return check;
  } catch (error) {
    if (error instanceof IsolationUnavailable) fail(error.message);
    throw error;
  }
}

/** A secret for session cookies: AUTH_SECRET, or one generated once and kept in the data dir. */
async function authSecret(dataDir: string): Promise<string> {
  const configured = env().AUTH_SECRET;
  if (configured) return configured;
  const file = join(dataDir, "auth-secret");
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const secret = randomBytes(32).toString("base64url");
  await writeFile(file, secret + "\n", { mode: 0o600 });
  return secret;
}

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.parentPath.includes("node_modules") || entry.parentPath.includes("generated")) continue;
    newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/** Builds the console when needed; throws when the build fails. */
async function buildIfNeeded(): Promise<void> {
  const buildId = join(root, ".next", "BUILD_ID");
  if (existsSync(buildId)) {
    const built = (await stat(buildId)).mtimeMs;
    const sources = Math.max(...(await Promise.all(["app", "components", "lib"].map((d) => newestMtime(join(root, d))))));
    if (sources <= built) return;
    console.log("Sources changed since the last build; rebuilding the console…");
  } else {
    console.log("Building the console (first start only; about a minute)…");
  }
  const child = spawn(process.execPath, [nextBin, "build"], { cwd: root, stdio: "inherit", env: childProcessEnv() });
  const code = await new Promise<number | null>((done) => child.on("exit", done));
  if (code !== 0) throw new Error("the build failed (see above); fix it and run npm start again.");
}

/**
 * Makes sure no other `npm start` holds the data directory, and stops the PostgreSQL one that died
 * left running on it (postgres.json names the start that ran it): otherwise this start would fail
 * on the leftover's postmaster.pid until someone killed it by hand. A server no dead start
 * recorded (one a CLI command runs) is left alone.
 */
async function takeOverDataDir(dataDir: string, clusterDir: string): Promise<void> {
  const recorded = await recordedStart(dataDir);
  if (!recorded) return; // not ours to stop (a CLI command's server, say): PostgreSQL says so if it runs
  if (recorded.running && recorded.pid !== process.pid) throw new Error(anotherStart(recorded.pid, dataDir));
  // The server the dead start recorded (a record from before it was recorded: whichever serves the cluster).
  const leftover = await stopLeftoverServer(clusterDir, recorded.postgresPid);
  if (leftover !== null) console.log(`Stopped the embedded PostgreSQL (process ${leftover}) that an earlier start left running.`);
}

/** The host as a URL names it: a wildcard address as localhost, an IPv6 address in brackets. */
function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}

function anotherStart(pid: number, dataDir: string): string {
  return `another npm start (process ${pid}) is running on ${dataDir}; stop it first, or set AIRLOCK_DATA_DIR to another directory.`;
}

function printBanner(url: string, credentials: DemoCredentials | null, credentialsFile: string | null) {
  const lines = ["", `Airlock is running at ${url}`, ""];
  if (credentials) {
    lines.push(`Demo logins (shown once here; kept, readable only by you, in ${credentialsFile ?? "the data directory"}):`);
    for (const user of credentials.users) lines.push(`  ${user.role.padEnd(10)} ${user.email.padEnd(28)} ${user.password}`);
    lines.push("", `Agent token for ${credentials.agent.name} (shown once):`, `  ${credentials.agent.token}`);
  } else if (credentialsFile && existsSync(credentialsFile)) {
    lines.push(`Demo logins and the agent token from the first start: ${credentialsFile}`);
  }
  lines.push(
    "",
    "Point an MCP client at it:",
    `  URL:    ${url}/api/mcp`,
    "  Header: Authorization: Bearer <agent token>",
    `  Only the code-mode tools, for less context: ${url}/api/mcp?tools=search_tools,submit_run,get_run`,
    "",
    "Press Ctrl-C to stop.",
    "",
  );
  console.log(lines.join("\n"));
}

async function main() {
  let config;
  try {
    config = env();
  } catch (error) {
    if (error instanceof EnvError) fail(error.message);
    throw error;
  }
  const dataDir = resolve(config.AIRLOCK_DATA_DIR);
  await makeDirectory(dataDir, 0o711).catch((error: Error) =>
    fail(`AIRLOCK_DATA_DIR=${dataDir} cannot be used as the data directory: ${error.message}. Point it at a directory this user may create and write.`),
  );
  // Another start on this data directory first: its port would be taken too, and that is the cause to name.
  const other = await recordedStart(dataDir);
  if (other?.running && other.pid !== process.pid) fail(anotherStart(other.pid, dataDir));
  await assertPortFree(config.PORT, config.AIRLOCK_HOST);
  try {
    await checkSandbox(resolveConfig().sandbox, config.AIRLOCK_IN_PROCESS_WORKER);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }

  let postgres: PostgresServer | null = null;
  let server: ChildProcess | null = null;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    // A server that died (an exit code, or a signal such as SIGKILL) has nothing left to drain;
    // what it left in its group (the upstream tool servers) is killed all the same, below.
    if (server && server.exitCode === null && server.signalCode === null && server.pid) {
      console.log("Stopping: runs in flight finish first…");
      // Only the server itself: it drains its executor, which still needs the upstream tool
      // servers (its children, in its process group) until the runs in flight are done.
      try {
        process.kill(server.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await new Promise((done) => {
        const timer = setTimeout(() => {
          try {
            if (server?.pid) process.kill(-server.pid, "SIGKILL");
          } catch {
            /* already gone */
          }
          done(null);
        }, DRAIN_MS);
        server?.once("exit", () => {
          clearTimeout(timer);
          done(null);
        });
      });
    }
    if (server?.pid) {
      try {
        process.kill(-server.pid, "SIGKILL"); // anything the server left behind in its group
      } catch {
        /* nothing left */
      }
    }
    if (postgres) {
      await postgres.stop();
      await rm(join(dataDir, "postgres.json"), { force: true });
    }
    if (code === 0) console.log("Stopped: the web server and the database are down; `npm start` starts them again with the same data.");
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  const url = config.AIRLOCK_PUBLIC_URL ?? `http://${urlHost(config.AIRLOCK_HOST)}:${config.PORT}`;
  let databaseUrl: string;
  try {
    if (config.DATABASE_URL) {
      const urls = externalDatabaseUrls(config.DATABASE_URL, config.AIRLOCK_MIGRATION_DATABASE_URL);
      await assertDatabaseReachable(urls.appUrl);
      if (urls.ownerUrl !== urls.appUrl) await assertDatabaseReachable(urls.ownerUrl);
      await migrateDatabase(urls.ownerUrl, urls.appRole);
      databaseUrl = urls.appUrl;
    } else {
      const cluster = await clusterDirFor(dataDir);
      if (cluster.relocated) console.log(`The postgres OS user cannot reach ${dataDir}; keeping the database in ${cluster.dir} instead.`);
      await takeOverDataDir(dataDir, cluster.dir);
      console.log(`Starting the embedded PostgreSQL (data in ${cluster.dir})…`);
      postgres = await startPostgres({ persistent: true, dataDir: cluster.dir });
      const urls = await prepareEmbeddedDatabase(postgres);
      databaseUrl = urls.appUrl;
      // Lets `npx airlock …` find this running database (and migrate it as the owner), and the console's address for its links.
      const record = { url: urls.appUrl, ownerUrl: urls.ownerUrl, pid: process.pid, consoleUrl: url, postgresPid: postgres.pid };
      await writeFile(join(dataDir, "postgres.json"), JSON.stringify(record), { mode: 0o600 });
    }
    const warning = await privilegeWarning(databaseUrl);
    if (warning) console.error(`airlock: warning: ${warning}`);
  } catch (error) {
    console.error(`airlock: ${error instanceof Error ? error.message : String(error)}`);
    return stop(1);
  }

  // From here on the database runs: a failure stops it too, never leaving it behind.
  let credentials: DemoCredentials | null;
  const credentialsFile = join(dataDir, "demo-credentials.txt");
  try {
    const db = createPrismaClient(databaseUrl);
    credentials = await seedDemo(db, { password: config.AIRLOCK_DEMO_PASSWORD, config: resolveConfig() });
    if (credentials) {
      const text = [
        ...credentials.users.map((u) => `${u.role}\t${u.email}\t${u.password}`),
        `agent\t${credentials.agent.name}\t${credentials.agent.token}`,
      ].join("\n");
      await writeFile(credentialsFile, text + "\n", { mode: 0o600 });
      await chmod(credentialsFile, 0o600);
      // A new log is signed at once: if this start does not come up, the next one extends that
      // checkpoint instead of finding an old log no checkpoint covers (which the job refuses to sign).
      await signCheckpoint(db, { type: "system", name: "seed" }, checkpointConfigFromEnv()).catch((error: unknown) => {
        const why = error instanceof Error ? error.message : String(error);
        console.error(`airlock: warning: the first audit checkpoint could not be signed (${why}); the checkpoint job tries again`);
      });
    }
    await db.$disconnect();
    setEnvForChildren({
      DATABASE_URL: databaseUrl,
      AUTH_SECRET: await authSecret(dataDir),
      // The web process drains its in-process executor on SIGTERM itself (lib/runs/boot.ts).
      NEXT_MANUAL_SIG_HANDLE: "true",
      NEXT_TELEMETRY_DISABLED: "1",
      // The server's output comes through a pipe: it logs for the terminal this command runs in (lib/log.ts).
      AIRLOCK_LOG_FORMAT: config.AIRLOCK_LOG_FORMAT ?? (process.stdout.isTTY ? "pretty" : "json"),
    });
    if (!dev) await buildIfNeeded();
  } catch (error) {
    console.error(`airlock: ${error instanceof Error ? error.message : String(error)}`);
    return stop(1);
  }

  server = spawn(
    process.execPath,
    // --disable-sigusr1: no other process of this user can open the server's inspector with a signal.
    // exit-with-parent: the server stops when this process is gone, however it went (killed outright included).
    ["--disable-sigusr1", "--import", EXIT_WITH_PARENT, nextBin, dev ? "dev" : "start", "-p", String(config.PORT), "-H", config.AIRLOCK_HOST],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"], env: childProcessEnv(), detached: true },
  );
  let announced = false;
  server.stdout?.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    if (!announced && /Ready|started server|Local:/i.test(text)) {
      announced = true;
      printBanner(url, credentials, credentialsFile);
    } else if (announced) {
      process.stdout.write(text);
    }
  });
  server.on("exit", (code, signal) => {
    if (!stopping) {
      console.error(`airlock: the web server exited (${code === null ? `killed by ${signal ?? "a signal"}` : `code ${code}`}).`);
      void stop(code ?? 1);
    }
  });
}

if (import.meta.main) {
  main().catch((error) => {
    console.error(`airlock: ${error instanceof Error ? error.stack : String(error)}`);
    process.exit(1);
  });
}
