/**
 * The database a CLI command works on: DATABASE_URL when set; otherwise the embedded PostgreSQL of
 * `npm start` — the running one if `npm start` is up (AIRLOCK_DATA_DIR/postgres.json), or started
 * just for this command and stopped after it. Migrations are applied first, as the owner
 * (AIRLOCK_MIGRATION_DATABASE_URL, or the embedded superuser), with the app role's grants
 * refreshed (lib/db/setup.ts); the command itself then runs as the app role, like the app.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { createPrismaClient, type Db } from "@/lib/db";
import { clusterDirFor, startPostgres, type PostgresServer } from "@/lib/db/postgres-server";
import { externalDatabaseUrls, migrateDatabase, prepareEmbeddedDatabase, type DatabaseUrls } from "@/lib/db/setup";
import { userOf } from "@/lib/db/roles";
import { env } from "@/lib/env";

/** `ownerUrl` is absent in files written by versions whose app connected as the owner. */
const runningSchema = z.object({ url: z.string(), ownerUrl: z.string().optional(), pid: z.number().int() }).strict();

/** The URLs of the embedded PostgreSQL that a running `npm start` wrote, or null. */
export async function runningEmbedded(dataDir: string): Promise<DatabaseUrls | null> {
  const file = join(dataDir, "postgres.json");
  if (!existsSync(file)) return null;
  const parsed = runningSchema.safeParse(JSON.parse(await readFile(file, "utf8")));
  if (!parsed.success) return null;
  try {
    process.kill(parsed.data.pid, 0);
  } catch {
    return null; // npm start is no longer running; the file is stale
  }
  const { url, ownerUrl = url } = parsed.data;
  return { appUrl: url, ownerUrl, appRole: userOf(ownerUrl) === userOf(url) ? null : userOf(url) };
}

/** The app's URL of a running `npm start`'s database (what workers connect with), or null. */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  return (await runningEmbedded(dataDir))?.appUrl ?? null;
}

export async function withCliDatabase<T>(fn: (db: Db, context: { appliedMigrations: string[] }) => Promise<T>): Promise<T> {
  const config = env();
  const dataDir = resolve(config.AIRLOCK_DATA_DIR);
  let server: PostgresServer | null = null;
  try {
    let urls = config.DATABASE_URL ? externalDatabaseUrls(config.DATABASE_URL, config.AIRLOCK_MIGRATION_DATABASE_URL) : await runningEmbedded(dataDir);
    let applied: string[];
    if (urls) {
      ({ applied } = await migrateDatabase(urls.ownerUrl, urls.appRole));
    } else {
      server = await startPostgres({ persistent: true, dataDir: (await clusterDirFor(dataDir)).dir });
      const prepared = await prepareEmbeddedDatabase(server);
      urls = prepared;
      applied = prepared.applied;
    }
    const db = createPrismaClient(urls.appUrl);
    try {
      return await fn(db, { appliedMigrations: applied });
    } finally {
      await db.$disconnect();
    }
  } finally {
    await server?.stop();
  }
}
