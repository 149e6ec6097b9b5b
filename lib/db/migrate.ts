/**
 * `applyMigrations(url)`: the equivalent of `prisma migrate deploy`, run in-process.
 *
 * Route: Prisma's own schema engine as WebAssembly (see ./schema-engine.ts), driven through
 * @prisma/adapter-pg. Not a re-implementation: the engine reads `prisma/migrations/*\/migration.sql`,
 * takes Prisma's advisory lock, applies each pending migration and records it in
 * `_prisma_migrations` (checksum = sha256 of migration.sql), exactly as the native CLI does, so
 * `prisma migrate deploy` / `migrate status` elsewhere accept the result.
 *
 * Guarantees: idempotent (a second call applies nothing, and does not load the engine when the
 * database has recorded every migration with its checksum); refuses edited or failed migrations
 * the way Prisma does (its error is passed on as the cause); an unreachable database is reported
 * as such, naming DATABASE_URL, without the password.
 *
 * `applyQueueMigrations(url)`: graphile-worker's own schema (the run job queue, schema
 * `graphile_worker`), installed or upgraded by graphile-worker's code. It needs CREATE on the
 * database, so it runs in the migrate step as the owner (lib/db/setup.ts), never as the app
 * role; once it is current, a runtime's start-up check only reads `graphile_worker.migrations`.
 *
 * Only `migration.sql` is read from each folder; the `schema.prisma` copy kept beside it is for
 * `scripts/migration-new.ts`.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runMigrations as runQueueMigrations } from "graphile-worker";
import pg from "pg";
import { AppError } from "@/lib/errors";
import { quietQueueLogger } from "@/lib/db/queue-logger";
import { NO_FILTERS, withSchemaEngine, type MigrationList } from "./schema-engine";

/** prisma/migrations of this checkout. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../prisma/migrations", import.meta.url));

export interface ApplyMigrationsOptions {
  /** Defaults to prisma/migrations. */
  migrationsDir?: string;
}

/** Reads the migrations folder the way Prisma's CLI does (sorted by folder name). */
export async function readMigrationsList(migrationsDir: string = MIGRATIONS_DIR): Promise<MigrationList> {
  const lockPath = "migration_lock.toml";
  const lockContent = await readFile(join(migrationsDir, lockPath), "utf8").catch(() => null);
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const directories = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => a.localeCompare(b));
  const migrationDirectories = await Promise.all(
    directories.map(async (name) => {
      const content = await readFile(join(migrationsDir, name, "migration.sql"), "utf8").then(
        (value) => ({ tag: "ok" as const, value }),
        (error: Error) => ({ tag: "error" as const, value: error.message }),
      );
      return { path: name, migrationFile: { path: "migration.sql", content } };
    }),
  );
  return {
    baseDir: migrationsDir,
    lockfile: { path: lockPath, content: lockContent },
    shadowDbInitScript: "",
    migrationDirectories,
  };
}

/** `postgres://user@host:port/db` — the URL without its password, for messages. */
export function describeDatabaseUrl(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    url.password = "";
    url.search = "";
    return url.toString();
  } catch {
    return "(unparseable URL)";
  }
}

type Recorded = { migration_name: string; checksum: string; finished: boolean; rolled_back: boolean };

/** The database's migration records, or null when it has no migration table. */
async function recordedMigrations(databaseUrl: string): Promise<Recorded[] | null> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const { rows: table } = await client.query<{ name: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS name`);
    if (!table[0]?.name) return null;
    const { rows } = await client.query<Recorded>(
      `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back FROM "_prisma_migrations"`,
    );
    return rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The list's migrations that `recorded` does not show applied with the same checksum. */
function notApplied(list: MigrationList, recorded: Recorded[] | null): string[] {
  const done = new Set((recorded ?? []).filter((row) => row.finished && !row.rolled_back).map((row) => `${row.migration_name}\n${row.checksum}`));
  return list.migrationDirectories
    .filter(
      (dir) =>
        dir.migrationFile.content.tag !== "ok" || !done.has(`${dir.path}\n${createHash("sha256").update(dir.migrationFile.content.value).digest("hex")}`),
    )
    .map((dir) => dir.path);
}

/** The migrations of this build the database has not applied (all of them without a migration table). Reads only. */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const list = await readMigrationsList();
  return notApplied(list, await recordedMigrations(databaseUrl));
}

/**
 * Whether the database has recorded exactly these migrations, each finished, not rolled back and
 * with the checksum of its file: then the engine would apply nothing. Anything else (a pending,
 * failed, edited or unknown migration, no table yet, a file that cannot be read) is the engine's
 * to apply or to refuse.
 */
async function allApplied(databaseUrl: string, list: MigrationList): Promise<boolean> {
  const recorded = await recordedMigrations(databaseUrl);
  return recorded !== null && recorded.length === list.migrationDirectories.length && notApplied(list, recorded).length === 0;
}

/** Fails with a message naming DATABASE_URL when the server cannot be reached or logged into. */
export async function assertDatabaseReachable(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    await client.query("select 1");
  } catch (error) {
    throw new AppError(
      "database_unavailable",
      `Cannot connect to the database at DATABASE_URL (${describeDatabaseUrl(databaseUrl)}): ` +
        `${error instanceof Error ? error.message : String(error)}. ` +
        "Check that PostgreSQL is running and that DATABASE_URL is right, or unset it to let Airlock start its own.",
      { cause: error, details: { database: describeDatabaseUrl(databaseUrl) } },
    );
  } finally {
    await client.end().catch(() => {});
  }
}

export async function applyMigrations(databaseUrl: string, options: ApplyMigrationsOptions = {}): Promise<{ applied: string[] }> {
  const migrationsList = await readMigrationsList(options.migrationsDir);
  await assertDatabaseReachable(databaseUrl);
  // Loading the engine costs more than a CLI command's own work: skipped when it has nothing to do.
  if (await allApplied(databaseUrl, migrationsList)) return { applied: [] };
  try {
    const output = await withSchemaEngine(databaseUrl, (engine) => engine.applyMigrations({ migrationsList, filters: NO_FILTERS }));
    return { applied: output.appliedMigrationNames };
  } catch (error) {
    throw new Error(
      `Applying migrations from ${migrationsList.baseDir} to ${describeDatabaseUrl(databaseUrl)} failed: ` +
        `${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** Installs or upgrades graphile-worker's schema (a no-op read when it is current). */
export async function applyQueueMigrations(databaseUrl: string): Promise<void> {
  try {
    await runQueueMigrations({ connectionString: databaseUrl, logger: quietQueueLogger });
  } catch (error) {
    throw new Error(
      `Installing the job queue's schema (graphile_worker) in ${describeDatabaseUrl(databaseUrl)} failed: ` +
        `${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
