/**
 * `createTestDatabase()`: a fresh database for one test file, cloned from the migrated template
 * made by global-setup.ts (CREATE DATABASE … TEMPLATE, ~tens of ms), with its own Prisma client.
 * Call `drop()` in afterAll; databases left behind are dropped with the server at teardown.
 *
 * The test file's process also gets a data directory of its own (AIRLOCK_DATA_DIR under
 * os.tmpdir(), removed when the process exits) unless the test set one: otherwise a runtime would sign audit
 * checkpoints of its throwaway chain into the project's `./.airlock`, the data of a developer's
 * `npm start`, whose chain they would then report as rewritten.
 *
 *   let db: TestDatabase;
 *   beforeAll(async () => { db = await createTestDatabase(); });
 *   afterAll(() => db.drop());
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import { setEnvForChildren } from "@/lib/env";
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
  ownDataDir();
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

/** Gives this test process a data directory when none is set (see the header), once. */
function ownDataDir(): void {
  if (process.env.AIRLOCK_DATA_DIR !== undefined) return;
  const dir = mkdtempSync(join(tmpdir(), "airlock-test-data-"));
  setEnvForChildren({ AIRLOCK_DATA_DIR: dir });
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
}
