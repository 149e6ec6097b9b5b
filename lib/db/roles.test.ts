/**
 * The app role, through the code npm start runs (prepareEmbeddedDatabase) on a persistent cluster
 * that an earlier version made: migrated and written to as the superuser, with no app role.
 */
import { chmod, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { quickAddJob, run as runQueue } from "graphile-worker";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordAudit } from "@/lib/audit/record";
import { createPrismaClient } from "@/lib/db";
import { applyMigrations, applyQueueMigrations } from "@/lib/db/migrate";
import { startPostgres, type PostgresServer } from "@/lib/db/postgres-server";
import { APP_ROLE, privilegeWarning } from "@/lib/db/roles";
import { APP_PASSWORD_FILE, externalDatabaseUrls, prepareEmbeddedDatabase, type DatabaseUrls } from "@/lib/db/setup";
import { quietQueueLogger } from "@/lib/db/queue-logger";

const SYSTEM = { type: "system", name: "test" } as const;

async function query<T extends pg.QueryResultRow = pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

let parent: string;
let dataDir: string;
let server: PostgresServer | undefined;
let urls: DatabaseUrls & { applied: string[] };
let oldEventId: bigint;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), "airlock-roles-test-"));
  await chmod(parent, 0o755); // like a project folder: the postgres OS user may traverse it
  dataDir = join(parent, "postgres");

  // What an earlier version left behind: migrated as the superuser, which the app used as well.
  server = await startPostgres({ persistent: true, dataDir });
  await applyMigrations(server.url);
  const old = createPrismaClient(server.url);
  await old.$transaction((tx) => recordAudit(tx, { actor: SYSTEM, action: "test.before_upgrade", subject: { type: "thing" } }));
  oldEventId = (await old.auditEvent.findFirstOrThrow({ where: { action: "test.before_upgrade" } })).id;
  await old.$disconnect();
  expect(await query(server.url, "SELECT 1 FROM pg_roles WHERE rolname = $1", [APP_ROLE])).toEqual([]);
  await server.stop();

  // The next npm start.
  server = await startPostgres({ persistent: true, dataDir });
  urls = await prepareEmbeddedDatabase(server);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (parent) await rm(parent, { recursive: true, force: true });
});

describe("an existing data directory without the app role", () => {
  it("is upgraded: the role exists, unprivileged, with its password kept in the data directory", async () => {
    expect(urls.appRole).toBe(APP_ROLE);
    expect(new URL(urls.appUrl).username).toBe(APP_ROLE);
    expect(urls.ownerUrl).toBe(server!.url);
    const [role] = await query(
      server!.url,
      "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolreplication, rolcanlogin FROM pg_roles WHERE rolname = $1",
      [APP_ROLE],
    );
    expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false, rolreplication: false, rolcanlogin: true });
    expect((await stat(join(dataDir, APP_PASSWORD_FILE))).mode & 0o777).toBe(0o600);
    // The data written before the upgrade is the app's to read.
    expect(await query(urls.appUrl, `SELECT action FROM "AuditEvent" WHERE id = $1`, [oldEventId])).toEqual([{ action: "test.before_upgrade" }]);
  });

  it("the app role owns nothing and is a member of no role", async () => {
    const [owned] = await query<{ n: number }>(
      urls.ownerUrl,
      `SELECT ((SELECT count(*) FROM pg_class WHERE relowner = r.oid) + (SELECT count(*) FROM pg_namespace WHERE nspowner = r.oid)
              + (SELECT count(*) FROM pg_proc WHERE proowner = r.oid) + (SELECT count(*) FROM pg_type WHERE typowner = r.oid)
              + (SELECT count(*) FROM pg_database WHERE datdba = r.oid) + (SELECT count(*) FROM pg_auth_members WHERE member = r.oid))::int AS n
       FROM pg_roles r WHERE rolname = $1`,
      [APP_ROLE],
    );
    expect(owned).toEqual({ n: 0 });
  });

  it("a second start changes nothing: same role, same password, no migration to apply", async () => {
    const again = await prepareEmbeddedDatabase(server!);
    expect(again).toEqual({ ...urls, applied: [] });
  });
});

describe("connected as the app role", () => {
  it("cannot SET session_replication_role = replica", async () => {
    await expect(query(urls.appUrl, "SET session_replication_role = replica")).rejects.toMatchObject({ code: "42501" });
    await expect(query(urls.appUrl, "BEGIN; SET LOCAL session_replication_role = replica; COMMIT")).rejects.toMatchObject({ code: "42501" });
  });

  it("cannot disable or drop the append-only triggers", async () => {
    for (const table of ["AuditEvent", "RunToolCall"]) {
      await expect(query(urls.appUrl, `ALTER TABLE "${table}" DISABLE TRIGGER ALL`)).rejects.toMatchObject({ code: "42501" });
      await expect(query(urls.appUrl, `ALTER TABLE "${table}" DISABLE TRIGGER USER`)).rejects.toMatchObject({ code: "42501" });
    }
    await expect(query(urls.appUrl, `DROP TRIGGER "AuditEvent_no_update_delete" ON "AuditEvent"`)).rejects.toMatchObject({ code: "42501" });
    await expect(
      query(urls.appUrl, `CREATE OR REPLACE FUNCTION "audit_event_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`),
    ).rejects.toMatchObject({ code: "42501" });
  });

  it("cannot write, UPDATE, DELETE or TRUNCATE audit events, chained or staged (refused by the grants, before any trigger)", async () => {
    for (const sql of [
      `INSERT INTO "AuditEvent" ("actorType", action, "subjectType", "prevHash", hash) VALUES ('system', 'forged', 'thing', '0', 'forged')`,
      `UPDATE "AuditEvent" SET action = 'x'`,
      `UPDATE "AuditPending" SET action = 'x'`,
      `DELETE FROM "AuditPending"`,
      `TRUNCATE "AuditPending"`,
      `DELETE FROM "AuditEvent"`,
      `TRUNCATE "AuditEvent"`,
      `DELETE FROM "RunToolCall"`,
      `TRUNCATE "RunToolCall" CASCADE`,
    ]) {
      await expect(query(urls.appUrl, sql), sql).rejects.toMatchObject({ code: "42501", message: expect.stringMatching(/permission denied/) });
    }
    expect(await query(urls.ownerUrl, `SELECT count(*)::int AS n FROM "AuditEvent" WHERE id = $1`, [oldEventId])).toEqual([{ n: 1 }]);
  });

  it("cannot change the schema, the migration history or the queue's schema version", async () => {
    for (const sql of [
      `CREATE TABLE public.mine (id int)`,
      `CREATE SCHEMA mine`,
      `DELETE FROM "_prisma_migrations"`,
      `DELETE FROM graphile_worker.migrations`,
      `SELECT setval(pg_get_serial_sequence('"AuditEvent"', 'id'), 1)`,
    ]) {
      await expect(query(urls.appUrl, sql), sql).rejects.toMatchObject({ code: "42501" });
    }
  });

  it("finds the schema current (Prisma's and the queue's) without being able to change it", async () => {
    expect(await applyMigrations(urls.appUrl)).toEqual({ applied: [] });
    await expect(applyQueueMigrations(urls.appUrl)).resolves.toBeUndefined();
  });

  it("does the app's work: appends to the audit chain and runs queue jobs", async () => {
    const app = createPrismaClient(urls.appUrl);
    try {
      await app.$transaction((tx) => recordAudit(tx, { actor: SYSTEM, action: "test.as_app", subject: { type: "thing" } }));
      const appended = await app.auditEvent.findFirstOrThrow({ where: { action: "test.as_app" } });
      expect(appended.id).toBeGreaterThan(oldEventId);
      const user = await app.user.create({ data: { email: "role-test@example.com", name: "R", role: "admin" } });
      await app.user.update({ where: { id: user.id }, data: { name: "Renamed" } });
      await app.user.delete({ where: { id: user.id } });
    } finally {
      await app.$disconnect();
    }

    // graphile-worker as the app: its start-up schema check, add_job (SQL and helper), a job run, a cron.
    await query(urls.appUrl, `SELECT graphile_worker.add_job('role_test', json_build_object('via', 'sql'))`);
    await quickAddJob({ connectionString: urls.appUrl, logger: quietQueueLogger }, "role_test", { via: "helper" });
    const seen: string[] = [];
    let resolveDone!: () => void;
    const done = new Promise<void>((resolve) => (resolveDone = resolve));
    const runner = await runQueue({
      connectionString: urls.appUrl,
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 100,
      logger: quietQueueLogger,
      crontab: "*/10 * * * * role_test_cron",
      taskList: {
        role_test: async (payload) => {
          seen.push((payload as { via: string }).via);
          if (seen.length === 2) resolveDone();
        },
        role_test_cron: async () => {},
      },
    });
    try {
      await done;
    } finally {
      await runner.stop();
    }
    expect(seen.sort()).toEqual(["helper", "sql"]);
    expect(await query(urls.ownerUrl, `SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'role_test'`)).toEqual([{ n: 0 }]);
  });

  it("start-up warns about a superuser connection, not about the app role", async () => {
    expect(await privilegeWarning(urls.appUrl)).toBeNull();
    expect(await privilegeWarning(urls.ownerUrl)).toMatch(/as "postgres", which is a superuser/);
  });
});

describe("an external DATABASE_URL", () => {
  it("grants to DATABASE_URL's user only when migrations run as another role", () => {
    const app = "postgres://airlock_app:a@db.example:5432/airlock";
    const owner = "postgres://airlock_owner:o@db.example:5432/airlock";
    expect(externalDatabaseUrls(app, owner)).toEqual({ appUrl: app, ownerUrl: owner, appRole: "airlock_app" });
    expect(externalDatabaseUrls(app)).toEqual({ appUrl: app, ownerUrl: app, appRole: null });
  });
});
