/**
 * The database a CLI command works on: DATABASE_URL when set; otherwise the embedded PostgreSQL of
 * `npm start` — the running one if `npm start` is up (AIRLOCK_DATA_DIR/postgres.json), or started
 * just for this command and stopped after it. Migrations are applied first, so a command never
 * runs against an old schema.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import { createPrismaClient, type Db } from "@/lib/db";
import { applyMigrations } from "@/lib/db/migrate";
import { clusterDirFor, startPostgres, type PostgresServer } from "@/lib/db/postgres-server";
import { env } from "@/lib/env";

const runningSchema = z.object({ url: z.string(), pid: z.number().int() }).strict();

export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const file = join(dataDir, "postgres.json");
  if (!existsSync(file)) return null;
  const parsed = runningSchema.safeParse(JSON.parse(await readFile(file, "utf8")));
  if (!parsed.success) return null;
  try {
    process.kill(parsed.data.pid, 0);
    return parsed.data.url;
  } catch {
    return null; // npm start is no longer running; the file is stale
  }
}

export async function withCliDatabase<T>(
  fn: (db: Db, context: { appliedMigrations: string[] }) => Promise<T>,
): Promise<T> {
  const config = env();
  const dataDir = resolve(config.AIRLOCK_DATA_DIR);
  let server: PostgresServer | null = null;
  let url = config.DATABASE_URL ?? (await runningEmbeddedUrl(dataDir));
  if (!url) {
    server = await startPostgres({ persistent: true, dataDir: (await clusterDirFor(dataDir)).dir });
    url = server.url;
  }
  const db = createPrismaClient(url);
  try {
    const { applied } = await applyMigrations(url);
    return await fn(db, { appliedMigrations: applied });
  } finally {
    await db.$disconnect();
    await server?.stop();
  }
}
