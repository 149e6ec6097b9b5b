/**
 * The two database roles Airlock runs with: the *owner* of the schema, which applies migrations
 * (and graphile-worker's queue schema) and nothing else, and the *app role*, which the web
 * processes, workers and CLI commands connect as. The append-only triggers on "AuditEvent" and
 * "RunToolCall" stop the app itself; they do not stop a superuser or a table owner, who can
 * `SET session_replication_role = replica` or `ALTER TABLE … DISABLE TRIGGER`. So the app role is
 * neither, and owns nothing.
 *
 * - ensureAppRole(adminUrl, role, password): creates the role if it is missing (LOGIN NOSUPERUSER
 *   NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS) and (re)sets those attributes and its
 *   password. Needs CREATEROLE; used for the embedded PostgreSQL, where the owner is its superuser.
 * - grantAppPrivileges(ownerUrl, role): as the owner, in the owner URL's database, sets the app
 *   role's privileges to exactly APP_PRIVILEGES_SQL (all of them revoked first, then granted, in
 *   one transaction). Run after every migration, so new tables are covered; default privileges
 *   cover tables created by migrations applied some other way until then.
 * - privilegeWarning(appUrl): one line saying why the connection can bypass the append-only
 *   triggers (superuser, member of the audit tables' owner, may SET session_replication_role), or
 *   null when it cannot.
 *
 * Role names are configuration (the user of DATABASE_URL, or APP_ROLE for the embedded server);
 * they are validated and quoted, never interpolated raw. docs/audit.md lists the same grants.
 */
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import pg from "pg";

/** The app role of the embedded PostgreSQL. */
export const APP_ROLE = "airlock_app";

/** Tables whose rows the app may only add (UPDATE on "RunToolCall" is allowed; its trigger limits it). */
export const APPEND_ONLY_TABLES = ["AuditEvent", "RunToolCall"] as const;

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertRoleName(role: string): string {
  if (!ROLE_NAME.test(role)) throw new Error(`Unsupported database role name "${role}" (lower-case letters, digits and _ only)`);
  return role;
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** `url` with another user and password (same host, port, database and options). */
export function withCredentials(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** The user a URL logs in as. */
export function userOf(url: string): string {
  return decodeURIComponent(new URL(url).username);
}

/**
 * The app role's password, kept beside the embedded cluster's other credentials (mode 0600);
 * generated the first time.
 */
export async function appRolePassword(file: string): Promise<string> {
  const stored = (await readFile(file, "utf8").catch(() => "")).trim();
  if (stored) return stored;
  const password = randomBytes(24).toString("hex");
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * Serializes role and grant changes: two processes may set up at once (npm start and a CLI
 * command), and concurrent GRANTs on one object fail with "tuple concurrently updated".
 */
const ROLE_SETUP_LOCK = 7_231_004_418;

async function inLockedTransaction(client: pg.Client, fn: () => Promise<void>): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [ROLE_SETUP_LOCK]);
    await fn();
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

export async function ensureAppRole(adminUrl: string, role: string, password: string): Promise<void> {
  const name = pg.escapeIdentifier(assertRoleName(role));
  await withClient(adminUrl, (client) =>
    inLockedTransaction(client, async () => {
      await client.query(`DO $$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ${pg.escapeLiteral(role)}) THEN CREATE ROLE ${name}; END IF;
      END $$`);
      await client.query(
        `ALTER ROLE ${name} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD ${pg.escapeLiteral(password)}`,
      );
    }),
  );
}

/** The row-level security policy that opens graphile-worker's tables to the app role. */
export const queuePolicyName = (role: string) => `${role}_queue_access`;

/**
 * What the app role may do, for `role` (already quoted). Everything is revoked first, so running
 * it again leaves exactly these privileges whatever was granted before.
 */
export function appPrivilegesSql(role: string, owner: string, database: string, queueSchema: boolean, queueRlsTables: readonly string[] = []): string[] {
  const app = pg.escapeIdentifier(assertRoleName(role));
  const ownerId = pg.escapeIdentifier(owner);
  const statements = [
    `GRANT CONNECT ON DATABASE ${pg.escapeIdentifier(database)} TO ${app}`,
    `GRANT USAGE ON SCHEMA public TO ${app}`,
    `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${app}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${app}`,
    // Read-only: lets a command running as the app see that the schema is current; never change it.
    `REVOKE INSERT, UPDATE, DELETE ON "_prisma_migrations" FROM ${app}`,
    // Events are staged in "AuditPending" and chained by airlock_audit_sequence() alone, as the owner.
    `REVOKE INSERT, UPDATE, DELETE ON "AuditEvent" FROM ${app}`,
    `REVOKE UPDATE, DELETE ON "AuditPending" FROM ${app}`,
    `REVOKE DELETE ON "RunToolCall" FROM ${app}`,
    // Holds are released, never deleted (its trigger allows only the release); retention purges
    // through airlock_purge() alone, which EXECUTE on the schema's functions covers.
    `REVOKE DELETE ON "LegalHold" FROM ${app}`,
    `REVOKE UPDATE, DELETE ON "RunOutcome" FROM ${app}`,
    `REVOKE UPDATE, DELETE ON "ResultRelease" FROM ${app}`,
    // Artifacts: links are append-only; a blob's UPDATE is limited by its trigger to restoring purged bytes.
    `REVOKE UPDATE, DELETE ON "RunArtifact" FROM ${app}`,
    `REVOKE DELETE ON "ArtifactBlob" FROM ${app}`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${app}`,
    `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${app}`,
    `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO ${app}`,
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${ownerId} IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${app}`,
    `ALTER DEFAULT PRIVILEGES FOR ROLE ${ownerId} IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO ${app}`,
  ];
  if (queueSchema) {
    statements.push(
      `GRANT USAGE ON SCHEMA graphile_worker TO ${app}`,
      `REVOKE ALL ON ALL TABLES IN SCHEMA graphile_worker FROM ${app}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA graphile_worker TO ${app}`,
      // The queue checks its schema version on start; only the owner installs or upgrades it.
      `REVOKE INSERT, UPDATE, DELETE ON graphile_worker.migrations FROM ${app}`,
      `REVOKE ALL ON ALL SEQUENCES IN SCHEMA graphile_worker FROM ${app}`,
      `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA graphile_worker TO ${app}`,
      `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA graphile_worker TO ${app}`,
    );
    // graphile-worker turns on row-level security (with no policy) on its private tables, so only
    // their owner sees rows; one policy per table lets the app role use them as the queue does.
    for (const table of queueRlsTables) {
      statements.push(
        `CREATE POLICY ${pg.escapeIdentifier(queuePolicyName(role))} ON graphile_worker.${pg.escapeIdentifier(table)} FOR ALL TO ${app} USING (true) WITH CHECK (true)`,
      );
    }
  }
  return statements;
}

/** Sets the app role's privileges (as the owner, in one transaction). */
export async function grantAppPrivileges(ownerUrl: string, role: string): Promise<void> {
  assertRoleName(role);
  await withClient(ownerUrl, async (client) => {
    const { rows } = await client.query<{ owner: string; database: string; queue: boolean; exists: boolean }>(
      `SELECT current_user AS owner, current_database() AS database,
              to_regnamespace('graphile_worker') IS NOT NULL AS queue,
              EXISTS (SELECT FROM pg_roles WHERE rolname = $1) AS exists`,
      [role],
    );
    const { owner, database, queue, exists } = rows[0]!;
    if (!exists) throw new Error(`The database role "${role}" (the user of DATABASE_URL) does not exist; create it first (docs/audit.md).`);
    if (owner === role) return; // one role for everything: nothing to separate (privilegeWarning says so)
    await inLockedTransaction(client, async () => {
      // Tables graphile-worker protects with row-level security that lack the app's policy (a
      // policy that exists is left alone: creating one locks the table against the running queue).
      const rls = queue
        ? (
            await client.query<{ name: string }>(
              `SELECT c.relname AS name FROM pg_class c
              WHERE c.relnamespace = 'graphile_worker'::regnamespace AND c.relkind = 'r' AND c.relrowsecurity
                AND NOT EXISTS (SELECT FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = $1)
              ORDER BY c.relname`,
              [queuePolicyName(role)],
            )
          ).rows.map((r) => r.name)
        : [];
      for (const sql of appPrivilegesSql(role, owner, database, queue, rls)) await client.query(sql);
    });
  });
}

/**
 * Null when the connection cannot switch off the append-only triggers; otherwise one line saying
 * why it can.
 */
export async function privilegeWarning(appUrl: string): Promise<string | null> {
  return withClient(appUrl, async (client) => {
    const { rows } = await client.query<{ user: string; superuser: boolean; owns: string[] | null; replica: boolean }>(
      `SELECT current_user AS user,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
              (SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c
                WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1::text[])
                  AND pg_has_role(current_user, c.relowner, 'MEMBER')) AS owns,
              has_parameter_privilege('session_replication_role', 'SET') AS replica`,
      [APPEND_ONLY_TABLES],
    );
    const { user, superuser, owns, replica } = rows[0]!;
    const why = superuser
      ? "is a superuser"
      : owns?.length
        ? `owns ${owns.map((t) => `"${t}"`).join(" and ")}`
        : replica
          ? "may SET session_replication_role"
          : null;
    if (!why) return null;
    return (
      `the app connects to PostgreSQL as "${user}", which ${why}, so it could switch off the audit log's append-only triggers; ` +
      "connect as an unprivileged role and migrate as the owner (AIRLOCK_MIGRATION_DATABASE_URL; see docs/audit.md)."
    );
  });
}
