/**
 * `afterCommit` (lib/db.ts) on a real PostgreSQL: a hook registered in a transaction runs only once
 * it has committed, never when it rolls back, and at once outside a transaction; a hook that
 * outlives its transaction (registered by work the transaction left running) runs at once too.
 * Statements are prepared once per connection, named by their text, up to a cap of distinct texts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { afterCommit, type Tx } from "@/lib/db";
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

describe("prepared statements", () => {
  /** The statements this transaction's connection has prepared, by text. */
  const prepared = (tx: Tx) => tx.$queryRaw<{ name: string; statement: string }[]>`SELECT name, statement FROM pg_prepared_statements`;

  it("prepare each distinct text once per connection, under the digest of the text, and run it again with other values", async () => {
    const statements = await db.prisma.$transaction(async (tx) => {
      for (const n of [1, 2, 3]) expect(await tx.$queryRaw<{ n: number }[]>`SELECT ${n}::int AS n`).toEqual([{ n }]);
      return prepared(tx);
    });
    const mine = statements.filter((s) => s.statement === "SELECT $1::int AS n");
    expect(mine).toHaveLength(1);
    expect(mine[0]!.name).toMatch(/^airlock_[\w-]{32}$/);
  });

  it("name at most the first 1,000 distinct texts of a process, and run the others unnamed", async () => {
    const statements = await db.prisma.$transaction(
      async (tx) => {
        for (let i = 0; i < 1_010; i++) await tx.$queryRawUnsafe(`SELECT ${i} AS distinct_text`);
        return prepared(tx);
      },
      { timeout: 60_000 },
    );
    const named = statements.filter((s) => s.name.startsWith("airlock_"));
    expect(named.length).toBeLessThanOrEqual(1_000);
    expect(named.some((s) => s.statement === "SELECT 0 AS distinct_text")).toBe(true);
    expect(named.some((s) => s.statement === "SELECT 1009 AS distinct_text")).toBe(false);
    // Past the cap, statements still run.
    expect(await db.prisma.$queryRawUnsafe(`SELECT 'after the cap' AS t`)).toEqual([{ t: "after the cap" }]);
  });
});
