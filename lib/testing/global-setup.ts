/**
 * Vitest global setup: one PostgreSQL server for the whole run, and a migrated template database
 * that each test file clones (lib/testing/db.ts), so no test ever runs against a developer's data.
 *
 * - DATABASE_URL set: that server is used as an admin connection; only databases named
 *   `airlock_template_<run>` / `airlock_test_<run>_*` are created in it, and dropped at teardown.
 *   The database DATABASE_URL names is never touched, and DATABASE_URL is removed from the
 *   environment the test workers inherit, so `prisma()` cannot reach it from a test.
 * - otherwise: a throwaway server (lib/db/postgres-server.ts) under os.tmpdir(), fsync off,
 *   template `airlock_template`, deleted at teardown.
 *
 * Migrations are applied once, to the template, with the same code as production
 * (lib/db/migrate.ts), so tests also prove the migration folder deploys.
 */
import { randomBytes } from "node:crypto";
import type { TestProject } from "vitest/node";
import { applyMigrations } from "@/lib/db/migrate";
import { startPostgres, type PostgresServer } from "@/lib/db/postgres-server";
import { assertSafeName, withAdminClient, withDatabase } from "./database-url";

export interface TestDatabaseContext {
  /** Superuser URL of the server (its `postgres` database, or DATABASE_URL's). */
  adminUrl: string;
  /** The migrated template each test database is created from. */
  templateDatabase: string;
  /** Prefix of every test database created in this run. */
  databasePrefix: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    airlockDatabase: TestDatabaseContext;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Test wiring is the one place outside lib/env.ts allowed to read process.env.
  const external = process.env.DATABASE_URL?.trim() || undefined;
  delete process.env.DATABASE_URL;

  let server: PostgresServer | undefined;
  const runId = randomBytes(4).toString("hex");
  const adminUrl = external ?? (server = await startPostgres({ persistent: false })).url;
  // A run-unique template on a shared server, so two runs cannot drop each other's.
  const templateDatabase = assertSafeName(external ? `airlock_template_${runId}` : "airlock_template");
  const databasePrefix = `airlock_test_${runId}_`;

  const dropOurs = () =>
    withAdminClient(adminUrl, async (client) => {
      const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $2)", [
        templateDatabase,
        databasePrefix,
      ]);
      for (const { datname } of rows) {
        await client.query(`DROP DATABASE IF EXISTS "${assertSafeName(datname)}" WITH (FORCE)`);
      }
    });

  try {
    await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE "${templateDatabase}"`));
    await applyMigrations(withDatabase(adminUrl, templateDatabase));
  } catch (error) {
    if (external) await dropOurs().catch(() => {});
    await server?.stop();
    throw error;
  }

  project.provide("airlockDatabase", { adminUrl, templateDatabase, databasePrefix });

  return async () => {
    if (server) {
      await server.stop(); // the whole cluster goes with it
    } else {
      await dropOurs();
    }
  };
}
