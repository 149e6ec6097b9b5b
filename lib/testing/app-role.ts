/**
 * For tests that prove what the app itself is refused: a client connected to a test database as a
 * fresh role holding exactly the app role's privileges (lib/db/roles.ts), and its removal.
 */
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createPrismaClient, type PrismaClient } from "@/lib/db";
import type { TestDatabase } from "./db";
import { ensureAppRole, grantAppPrivileges, withCredentials } from "@/lib/db/roles";
import { withAdminClient } from "./database-url";

export type AppRoleClient = { client: PrismaClient; drop(): Promise<void> };

export async function connectAsAppRole(db: TestDatabase): Promise<AppRoleClient> {
  const { adminUrl } = inject("airlockDatabase");
  const role = `airlock_app_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(12).toString("hex");
  await ensureAppRole(adminUrl, role, password);
  await grantAppPrivileges(db.url, role);
  const client = createPrismaClient(withCredentials(db.url, role, password));
  return {
    client,
    async drop() {
      await client.$disconnect();
      await db.prisma.$executeRawUnsafe(`DROP OWNED BY "${role}"`).catch(() => {});
      await withAdminClient(adminUrl, (admin) => admin.query(`DROP ROLE IF EXISTS "${role}"`)).catch(() => {});
    },
  };
}
