/**
 * Getting a database ready for the app — the one sequence behind `npm start`, every CLI command
 * and the browser tests:
 *
 *   migrateDatabase(ownerUrl, appRole): as the owner, Prisma's migrations (migrate.ts), then
 *     graphile-worker's queue schema, then the app role's privileges set afresh (roles.ts), so
 *     tables a migration just added are covered.
 *   prepareEmbeddedDatabase(server): for the PostgreSQL that Airlock starts itself. The owner is
 *     its superuser; the app connects as APP_ROLE with its own password, generated once and kept
 *     in the cluster folder (`app-password`, 0600, beside the superuser's `password`). A cluster made
 *     by an earlier version (where the app connected as the superuser) is upgraded in place: the
 *     role is created and granted on the next start.
 *   externalDatabaseUrls(DATABASE_URL, AIRLOCK_MIGRATION_DATABASE_URL): for a server given by
 *     URL. The app role is DATABASE_URL's user (the DBA creates it); migrations run as the
 *     migration URL's user and grant to the app role. Without a migration URL both are the same
 *     role and no grants are made — start-up then warns (roles.ts privilegeWarning).
 */
import { join } from "node:path";
import { applyMigrations, applyQueueMigrations } from "./migrate";
import type { PostgresServer } from "./postgres-server";
import { APP_ROLE, appRolePassword, ensureAppRole, grantAppPrivileges, userOf, withCredentials } from "./roles";

export type DatabaseUrls = {
  /** What the app, workers and CLI commands connect with. */
  appUrl: string;
  /** What migrations run as. */
  ownerUrl: string;
  /** The role granted to by migrateDatabase; null when the app connects as the owner. */
  appRole: string | null;
};

/** The file, in the embedded cluster's folder, that keeps the app role's password. */
export const APP_PASSWORD_FILE = "app-password";

export async function migrateDatabase(ownerUrl: string, appRole: string | null): Promise<{ applied: string[] }> {
  const { applied } = await applyMigrations(ownerUrl);
  await applyQueueMigrations(ownerUrl);
  if (appRole) await grantAppPrivileges(ownerUrl, appRole);
  return { applied };
}

export async function prepareEmbeddedDatabase(
  server: Pick<PostgresServer, "url" | "dataDir">,
  role: string = APP_ROLE,
): Promise<DatabaseUrls & { applied: string[] }> {
  const password = await appRolePassword(join(server.dataDir, APP_PASSWORD_FILE));
  await ensureAppRole(server.url, role, password);
  const { applied } = await migrateDatabase(server.url, role);
  return { ownerUrl: server.url, appUrl: withCredentials(server.url, role, password), appRole: role, applied };
}

export function externalDatabaseUrls(databaseUrl: string, migrationUrl?: string): DatabaseUrls {
  const ownerUrl = migrationUrl ?? databaseUrl;
  const appRole = userOf(databaseUrl);
  return { appUrl: databaseUrl, ownerUrl, appRole: userOf(ownerUrl) === appRole ? null : appRole };
}
