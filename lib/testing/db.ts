/**
 * `createTestDatabase()`: a fresh database for one test file, cloned from the migrated template
 * made by global-setup.ts (CREATE DATABASE … TEMPLATE, ~tens of ms), with its own Prisma client.
 * Call `drop()` in afterAll; databases left behind are dropped with the server at teardown.
 *
 *   let db: TestDatabase;
 *   beforeAll(async () => { db = await createTestDatabase(); });
 *   afterAll(() => db.drop());
 */
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import { assertSafeName, withAdminClient, withDatabase } from "./database-url";

export interface TestDatabase {
  name: string;
  url: string;
  prisma: PrismaClient;
  /** Disconnects `prisma` and drops the database (idempotent). */
  drop(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /** An empty database (no migrations applied) instead of a clone of the template. */
  empty?: boolean;
}

export async function createTestDatabase(options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const { adminUrl, templateDatabase, databasePrefix } = inject("airlockDatabase");
  const name = assertSafeName(`${databasePrefix}${randomBytes(6).toString("hex")}`);
  const template = options.empty ? "template0" : assertSafeName(templateDatabase);
  await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  const url = withDatabase(adminUrl, name);
  const prisma = createPrismaClient(url);
  let dropping: Promise<void> | undefined;
  return {
    name,
    url,
    prisma,
    drop: () =>
      (dropping ??= (async () => {
        await prisma.$disconnect();
        await withAdminClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
      })()),
  };
}
