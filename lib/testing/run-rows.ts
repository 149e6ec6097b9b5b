/**
 * For tests that write runs directly, without intake: a test database with an admin owner and one
 * agent of theirs, and run rows in any status with placeholder content.
 */
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import type { Prisma } from "@/lib/generated/prisma/client";
import { createTestDatabase, type TestDatabase } from "./db";

const SYSTEM: Actor = { type: "system", name: "test" };

/** A fresh test database (drop it in afterAll) with owner@example.com, an admin, and their agent `name`. */
export async function databaseWithAgent(name: string): Promise<{ db: TestDatabase; agentId: string }> {
  const db = await createTestDatabase();
  await db.prisma.$transaction((tx) => createUser(tx, SYSTEM, { email: "owner@example.com", role: "admin" }));
  const { agentId } = await db.prisma.$transaction((tx) => createAgent(tx, SYSTEM, { name, ownerEmail: "owner@example.com" }));
  return { db, agentId };
}

/** A run of `agentId` whose script is `return 1;`, with `fields` (its status at least) as given; its id. */
export async function insertRun(
  db: TestDatabase,
  agentId: string,
  fields: Omit<Prisma.RunUncheckedCreateInput, "agentId" | "language" | "code" | "codeSha256" | "purpose" | "inputsDigest" | "requestDigest"> & {
    status: Prisma.RunUncheckedCreateInput["status"];
    purpose?: string;
  },
): Promise<string> {
  const run = await db.prisma.run.create({
    data: { language: "javascript", code: "return 1;", codeSha256: "x", purpose: "test", inputsDigest: "x", requestDigest: "x", ...fields, agentId },
  });
  return run.id;
}
