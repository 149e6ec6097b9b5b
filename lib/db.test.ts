/**
 * `afterCommit` (lib/db.ts) on a real PostgreSQL: a hook registered in a transaction runs only once
 * it has committed, never when it rolls back, and at once outside a transaction; a hook that
 * outlives its transaction (registered by work the transaction left running) runs at once too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { afterCommit } from "@/lib/db";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

describe("afterCommit", () => {
  it("runs a transaction's hooks after its commit, in order, and not before", async () => {
    const calls: string[] = [];
    await db.prisma.$transaction(async (tx) => {
      afterCommit(() => calls.push("first"));
      await tx.$executeRaw`SELECT 1`;
      afterCommit(() => calls.push("second"));
      expect(calls).toEqual([]);
    });
    expect(calls).toEqual(["first", "second"]);
  });

  it("drops the hooks of a transaction that rolls back", async () => {
    const calls: string[] = [];
    await expect(
      db.prisma.$transaction(async () => {
        afterCommit(() => calls.push("rolled back"));
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    expect(calls).toEqual([]);
  });

  it("runs at once outside a transaction, and after its transaction has ended", async () => {
    const calls: string[] = [];
    afterCommit(() => calls.push("now"));
    expect(calls).toEqual(["now"]);
    let late: Promise<void> | undefined;
    await db.prisma.$transaction(async () => {
      late = new Promise<void>((resolve) => setTimeout(resolve, 50)).then(() => afterCommit(() => calls.push("late")));
    });
    await late;
    expect(calls).toEqual(["now", "late"]);
  });

  it("leaves the batch form of $transaction working", async () => {
    const [one] = await db.prisma.$transaction([db.prisma.$queryRaw<{ n: number }[]>`SELECT 1::int AS n`]);
    expect(one).toEqual([{ n: 1 }]);
  });
});
