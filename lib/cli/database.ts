/**
 * The database a CLI command works on: DATABASE_URL when set; otherwise the embedded PostgreSQL of
 * `npm start` — the running one if `npm start` is up (AIRLOCK_DATA_DIR/postgres.json), or started
 * just for this command and stopped after it. Migrations are applied first, as the owner
 * (AIRLOCK_MIGRATION_DATABASE_URL, or the embedded superuser), with the app role's grants
 * refreshed (lib/db/setup.ts); the command itself then runs as the app role, like the app.
 *
 * A command that reads (audit verify/export/…, `exec --agent`) passes `mustExist`: it never creates
 * a database. With no cluster under AIRLOCK_DATA_DIR, or a DATABASE_URL whose database does not
 * exist or holds no Airlock schema, it fails (NoAirlockDatabase, one line naming the directory or
 * the URL without its password) and nothing is written: no folder, no cluster, no schema.
 *
 * A database this command started is stopped when the command ends, and when it is interrupted
 * (Ctrl-C, SIGTERM), even while it is still starting: the command then exits 130 (143), leaving
 * nothing running on the data directory for the next command or `npm start` to trip over.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import pg from "pg";
import { createPrismaClient, type Db } from "@/lib/db";
import { isAlive } from "@/lib/db/postgres-process";
import { clusterDirFor, existingClusterDir, startPostgres, stopLeftoverServer, type PostgresServer } from "@/lib/db/postgres-server";
import { externalDatabaseUrls, migrateDatabase, prepareEmbeddedDatabase, type DatabaseUrls } from "@/lib/db/setup";
import { userOf } from "@/lib/db/roles";
import { env, setEnvForChildren } from "@/lib/env";
import { AppError } from "@/lib/errors";

/**
 * `ownerUrl` is absent in files written by versions whose app connected as the owner;
 * `consoleUrl` (where the running start serves the console) and `postgresPid` (its database's
 * postmaster) in those written before they were recorded. A consoleUrl that is not a URL is kept
 * out of use, not a reason to lose the record.
 */
const runningSchema = z
  .object({
    url: z.string(),
    ownerUrl: z.string().optional(),
    pid: z.number().int(),
    consoleUrl: z.string().optional(),
    postgresPid: z.number().int().optional(),
  })
  .strict();

/** What `npm start` recorded in the data directory (postgres.json), and whether that start still runs; null when nothing is recorded. */
export async function recordedStart(dataDir: string): Promise<({ running: boolean } & z.infer<typeof runningSchema>) | null> {
  const file = join(dataDir, "postgres.json");
  if (!existsSync(file)) return null;
  let recorded: unknown;
  try {
    recorded = JSON.parse(await readFile(file, "utf8"));
  } catch {
    return null; // torn: nothing known
  }
  const parsed = runningSchema.safeParse(recorded);
  if (!parsed.success) return null;
  // Not running: npm start was killed outright, and its database may be left running.
  return { running: isAlive(parsed.data.pid), ...parsed.data };
}

/** The URLs of the embedded PostgreSQL that a running `npm start` wrote, or null. */
export async function runningEmbedded(dataDir: string): Promise<DatabaseUrls | null> {
  return urlsOfRunning(await recordedStart(dataDir));
}

function urlsOfRunning(recorded: Awaited<ReturnType<typeof recordedStart>>): DatabaseUrls | null {
  if (!recorded?.running) return null;
  const { url, ownerUrl = url } = recorded;
  return { appUrl: url, ownerUrl, appRole: userOf(ownerUrl) === userOf(url) ? null : userOf(url) };
}

/** The app's URL of a running `npm start`'s database (what workers connect with), or null. */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  return (await runningEmbedded(dataDir))?.appUrl ?? null;
}

/** A read found no Airlock database where it looked; the message names the place. */
export class NoAirlockDatabase extends AppError {
  constructor(where: string, why: string) {
    super("not_found", `No Airlock database ${where}: ${why}. Nothing was created.`, { details: { where } });
  }
}

/** `url` without its password, to name it in a message. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = "";
  return parsed.toString();
}

/** Refuses (NoAirlockDatabase) a server whose database does not exist or has never been migrated. */
async function assertAirlockDatabase(url: string): Promise<void> {
  const where = `at ${withoutPassword(url)}`;
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (error) {
    if ((error as { code?: string }).code === "3D000") throw new NoAirlockDatabase(where, "that database does not exist");
    throw error;
  }
  try {
    const { rows } = await client.query<{ migrations: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS migrations`);
    if (!rows[0]?.migrations) throw new NoAirlockDatabase(where, "the database has no Airlock schema (`npx airlock db migrate` or `npm start` makes one)");
  } finally {
    await client.end();
  }
}

export type CliDatabaseOptions = {
  /** The command reads: fail (NoAirlockDatabase) rather than create a database. */
  mustExist?: boolean;
};

export async function withCliDatabase<T>(
  fn: (db: Db, context: { appliedMigrations: string[]; appUrl: string }) => Promise<T>,
  options: CliDatabaseOptions = {},
): Promise<T> {
  const config = env();
  const dataDir = resolve(config.AIRLOCK_DATA_DIR);
  let server: PostgresServer | null = null;
  let starting: Promise<PostgresServer> | null = null;
  let clusterDir: string | null = null;
  /** Set by a signal: the database's stop, then the exit (130 or 143); the command's own end waits for it. */
  let interruption: Promise<void> | null = null;
  const interrupted = (signal: NodeJS.Signals) => {
    const exit = () => process.exit(signal === "SIGINT" ? 130 : 143);
    if (!starting) return exit();
    console.error("airlock: interrupted; stopping the database this command started.");
    // A start the signal broke off (it reaches pg_ctl, in the job, while the postmaster runs on in a
    // session of its own) leaves a server no handle stands for: it is stopped and waited for on its
    // cluster, or the exit would come first.
    const stopped = starting.then<unknown, unknown>(
      (started) => started.stop(),
      () => clusterDir && stopLeftoverServer(clusterDir),
    );
    interruption = stopped.then(exit, exit);
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    // What npm start recorded, read once: its database while it runs, or the one it left when killed.
    const recorded = config.DATABASE_URL ? null : await recordedStart(dataDir);
    let urls = config.DATABASE_URL ? externalDatabaseUrls(config.DATABASE_URL, config.AIRLOCK_MIGRATION_DATABASE_URL) : urlsOfRunning(recorded);
    // Links a command prints (an export's, a run's) name the console the running start serves, on
    // whatever port it was given, unless AIRLOCK_PUBLIC_URL says where people open it.
    const serving = recorded?.running ? recorded.consoleUrl : undefined;
    if (serving && URL.canParse(serving) && !config.AIRLOCK_PUBLIC_URL) setEnvForChildren({ AIRLOCK_PUBLIC_URL: serving });
    let applied: string[];
    if (urls) {
      if (options.mustExist) await assertAirlockDatabase(urls.ownerUrl);
      ({ applied } = await migrateDatabase(urls.ownerUrl, urls.appRole));
    } else {
      const existing = existingClusterDir(dataDir);
      if (options.mustExist && !existing) {
        throw new NoAirlockDatabase(`in ${dataDir}`, "no PostgreSQL cluster there (set AIRLOCK_DATA_DIR to the server's data directory, or DATABASE_URL)");
      }
      // An npm start killed outright leaves its database running on the cluster: stopped, as the
      // next npm start would stop it, rather than a second server refused on its files. Only the
      // very server that start recorded: one another command or a new start runs is not this one's.
      if (existing && recorded && !recorded.running && recorded.postgresPid !== undefined) {
        const leftover = await stopLeftoverServer(existing, recorded.postgresPid);
        if (leftover !== null) console.error(`airlock: stopped the embedded PostgreSQL (process ${leftover}) that an earlier npm start left running.`);
      }
      // Stopped with this command even if it is killed outright (SIGKILL): a watchdog shuts it down.
      clusterDir = existing ?? (await clusterDirFor(dataDir)).dir;
      starting = startPostgres({ persistent: true, dataDir: clusterDir, stopWithOwner: true });
      server = await starting;
      const prepared = await prepareEmbeddedDatabase(server);
      urls = prepared;
      applied = prepared.applied;
    }
    const db = createPrismaClient(urls.appUrl);
    try {
      return await fn(db, { appliedMigrations: applied, appUrl: urls.appUrl });
    } finally {
      await db.$disconnect();
    }
  } finally {
    // A start the signal broke off fails here first: the exit is the interruption's, once the database is down.
    if (interruption) await interruption;
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    await server?.stop();
  }
}
