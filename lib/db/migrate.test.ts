import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { applyMigrations, MIGRATIONS_DIR, readMigrationsList } from "@/lib/db/migrate";
import { NO_FILTERS, withSchemaEngine } from "@/lib/db/schema-engine";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";

describe("applyMigrations on an empty database", () => {
  let db: TestDatabase;
  let client: pg.Client;
  let firstRun: { applied: string[] };

  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
    firstRun = await applyMigrations(db.url);
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it("applies every migration folder, in order, once", async () => {
    const folders = (await readMigrationsList()).migrationDirectories.map((d) => d.path);
    expect(folders.length).toBeGreaterThan(0);
    expect(firstRun.applied).toEqual(folders);
    expect(await applyMigrations(db.url)).toEqual({ applied: [] });
  });

  it("records migrations the way `prisma migrate deploy` does", async () => {
    const { rows } = await client.query<{
      migration_name: string;
      checksum: string;
      finished_at: Date | null;
      rolled_back_at: Date | null;
      applied_steps_count: number;
    }>("SELECT * FROM _prisma_migrations ORDER BY migration_name");
    expect(rows.map((r) => r.migration_name)).toEqual(firstRun.applied);
    for (const row of rows) {
      const sql = await readFile(join(MIGRATIONS_DIR, row.migration_name, "migration.sql"));
      expect(row.checksum).toBe(createHash("sha256").update(sql).digest("hex"));
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    // Prisma's own history check (behind `migrate status` / `migrate deploy`) finds nothing to do.
    const migrationsList = await readMigrationsList();
    const diagnosis = await withSchemaEngine(db.url, (engine) =>
      engine.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters: NO_FILTERS }),
    );
    expect(diagnosis).toEqual({
      editedMigrationNames: [],
      failedMigrationNames: [],
      hasMigrationsTable: true,
      history: null,
    });
  });

  it("keeps, in the newest migration folder, the schema it was made from: prisma/schema.prisma (the next migration's starting point)", async () => {
    const newest = (await readMigrationsList()).migrationDirectories.map((d) => d.path).at(-1)!;
    const copy = await readFile(join(MIGRATIONS_DIR, newest, "schema.prisma"), "utf8");
    expect(copy).toBe(await readFile(join(MIGRATIONS_DIR, "..", "schema.prisma"), "utf8"));
  });

  it("creates the schema's tables", async () => {
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining([
        "Agent",
        "AgentToken",
        "AuditEvent",
        "Dataset",
        "LoginAttempt",
        "PolicyVersion",
        "Review",
        "Run",
        "UpstreamServer",
        "UpstreamTool",
        "User",
        "_prisma_migrations",
      ]),
    );
  });
});

describe("the AuditEvent table is append-only", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.prisma.auditEvent.create({
      data: { actorType: "system", action: "test.created", subjectType: "test", prevHash: "0", hash: "h1" },
    });
  });
  afterAll(() => db?.drop());

  it("accepts inserts", async () => {
    await db.prisma.auditEvent.create({
      data: { actorType: "system", action: "test.second", subjectType: "test", prevHash: "h1", hash: "h2" },
    });
    expect(await db.prisma.auditEvent.count()).toBe(2);
  });

  it("refuses UPDATE", async () => {
    await expect(db.prisma.auditEvent.updateMany({ where: { hash: "h1" }, data: { action: "tampered" } })).rejects.toThrow(
      /audit_events is append-only: UPDATE/,
    );
  });

  it("refuses DELETE", async () => {
    await expect(db.prisma.auditEvent.deleteMany({})).rejects.toThrow(/audit_events is append-only: DELETE/);
  });

  it("refuses TRUNCATE", async () => {
    await expect(db.prisma.$executeRawUnsafe('TRUNCATE "AuditEvent"')).rejects.toThrow(/audit_events is append-only: TRUNCATE/);
  });

  it("reports the refusal as insufficient_privilege (42501) to plain SQL clients", async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await expect(client.query(`UPDATE "AuditEvent" SET action = 'x'`)).rejects.toMatchObject({
        code: "42501",
        message: expect.stringContaining("audit_events is append-only"),
      });
    } finally {
      await client.end();
    }
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
    expect(rows.map((r) => r.action)).toEqual(["test.created", "test.second"]);
  });
});

describe("a failing migration", () => {
  let db: TestDatabase;
  let migrationsDir: string;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
    migrationsDir = await mkdtemp(join(tmpdir(), "airlock-migrations-"));
    const write = async (name: string, sql: string) => {
      await mkdir(join(migrationsDir, name));
      await writeFile(join(migrationsDir, name, "migration.sql"), sql);
    };
    await writeFile(join(migrationsDir, "migration_lock.toml"), 'provider = "postgresql"\n');
    await write("20260101000000_ok", "CREATE TABLE ok_table (id int);");
    // A function body with semicolons, then a failure: the whole script must roll back.
    await write(
      "20260102000000_bad",
      "CREATE TABLE half_table (id int);\n" + "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END; $$;\n" + "SELECT 1/0;",
    );
  });
  afterAll(async () => {
    await db?.drop();
    if (migrationsDir) await rm(migrationsDir, { recursive: true, force: true });
  });

  it("is rolled back as a whole, recorded as failed, and blocks later deploys", async () => {
    await expect(applyMigrations(db.url, { migrationsDir })).rejects.toThrow(/division by zero/);
    const tables = await db.prisma.$queryRawUnsafe<{ table_name: string }[]>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    expect(tables.map((t) => t.table_name)).toEqual(["_prisma_migrations", "ok_table"]);
    const rows = await db.prisma.$queryRawUnsafe<{ migration_name: string; finished_at: Date | null }[]>(
      "SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name",
    );
    expect(rows).toEqual([
      { migration_name: "20260101000000_ok", finished_at: expect.any(Date) },
      { migration_name: "20260102000000_bad", finished_at: null },
    ]);
    await expect(applyMigrations(db.url, { migrationsDir })).rejects.toThrow(/20260102000000_bad/);
  });
});

describe("a database that has every migration already", () => {
  let db: TestDatabase;
  let migrationsDir: string;
  const write = async (name: string, sql: string) => {
    await mkdir(join(migrationsDir, name), { recursive: true });
    await writeFile(join(migrationsDir, name, "migration.sql"), sql);
  };
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
    migrationsDir = await mkdtemp(join(tmpdir(), "airlock-migrations-"));
    await writeFile(join(migrationsDir, "migration_lock.toml"), 'provider = "postgresql"\n');
    await write("20260101000000_first", "CREATE TABLE first_table (id int);");
    expect(await applyMigrations(db.url, { migrationsDir })).toEqual({ applied: ["20260101000000_first"] });
  });
  afterAll(async () => {
    await db?.drop();
    if (migrationsDir) await rm(migrationsDir, { recursive: true, force: true });
  });

  it("applies nothing, and still applies a migration added since", async () => {
    expect(await applyMigrations(db.url, { migrationsDir })).toEqual({ applied: [] });
    await write("20260102000000_second", "CREATE TABLE second_table (id int);");
    expect(await applyMigrations(db.url, { migrationsDir })).toEqual({ applied: ["20260102000000_second"] });
    const tables = await db.prisma.$queryRawUnsafe<{ table_name: string }[]>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE '%_table' ORDER BY table_name",
    );
    expect(tables.map((t) => t.table_name)).toEqual(["first_table", "second_table"]);
  });
});

describe("a deploy role that may create tables but not schemas", () => {
  it("can apply the migrations", async () => {
    const db = await createTestDatabase({ empty: true });
    const { adminUrl } = inject("airlockDatabase");
    const role = `airlock_deployer_${randomBytes(4).toString("hex")}`;
    const asAdmin = async (url: string, sql: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    };
    try {
      await asAdmin(adminUrl, `CREATE ROLE ${role} LOGIN PASSWORD 'deployer-password'`);
      await asAdmin(adminUrl, `REVOKE CREATE ON DATABASE "${db.name}" FROM PUBLIC`);
      await asAdmin(db.url, `GRANT USAGE, CREATE ON SCHEMA public TO ${role}`);
      const url = new URL(db.url);
      url.username = role;
      url.password = "deployer-password";
      const { applied } = await applyMigrations(url.toString());
      expect(applied.length).toBeGreaterThan(0);
    } finally {
      await db.drop();
      await asAdmin(adminUrl, `DROP ROLE IF EXISTS ${role}`);
    }
  });
});

describe("applyMigrations errors", () => {
  it("names DATABASE_URL, without the password, when the database is unreachable", async () => {
    const error = await applyMigrations("postgres://someone:s3cret@127.0.0.1:1/airlock").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/DATABASE_URL/);
    expect((error as Error).message).toMatch(/127\.0\.0\.1:1/);
    expect((error as Error).message).not.toMatch(/s3cret/);
  });
});
