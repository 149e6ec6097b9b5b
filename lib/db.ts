/**
 * The app's Prisma client (Prisma 7, `prisma-client` generator, pg driver adapter).
 *
 * - `prisma()`: the process-wide client for DATABASE_URL (read through lib/env.ts, the only
 *   module that reads the environment). Created on first use, so importing this module never connects and
 *   never requires DATABASE_URL; cached on globalThis so Next's dev hot-reload does not open a
 *   new pool on every edit.
 * - `createPrismaClient(url)`: a separate client, for tests (one database per test file, see
 *   lib/testing/db.ts) and the CLI. The caller disconnects it.
 * - `Tx`: the client handed to `$transaction(async (tx) => …)`. Mutating services take a `tx`
 *   so that their audit event commits or rolls back with the change itself.
 * - `afterCommit(hook)`: work that must follow a commit and never a rollback (log lines): a hook
 *   registered inside `$transaction(async (tx) => …)` runs once that transaction has committed, is
 *   dropped if it rolls back, and runs at once outside a transaction.
 * - Every read of "AuditEvent" through a client made here (its transactions included) first
 *   chains the audit events already committed (lib/db/audit-sequence.ts, on the client itself,
 *   outside the caller's transaction), so it sees every event recorded before it, whichever
 *   process recorded it.
 *
 * No `import "server-only"` here: that package throws outside the react-server condition, i.e.
 * in vitest and the tsx CLI, which both use this module. Client code is kept away from lib/**
 * by the ESLint import rule instead.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient, type Prisma } from "@/lib/generated/prisma/client";
import { env } from "@/lib/env";
import { sequenceAudit } from "@/lib/db/audit-sequence";

export type { PrismaClient };
export type Tx = Prisma.TransactionClient;

/**
 * Statements are named prepared statements, named by the digest of their text: a connection parses
 * each distinct text once, and PostgreSQL may keep its plan, instead of parsing and planning it
 * again on every execution (a third to two thirds of PostgreSQL's CPU on the demo run). As with
 * any prepared statement, after five executions PostgreSQL may use a generic plan where it
 * estimates one no costlier than the custom plans so far; `ALTER ROLE airlock_app SET
 * plan_cache_mode = force_custom_plan` turns that off (docs/deploy.md). The first PREPARED_TEXTS
 * distinct texts of the process are named, the rest run unnamed, so no connection ever holds more
 * than that many. Named statements need a connection of their own, as LISTEN does: a
 * transaction-mode pooler (PgBouncer's `pool_mode = transaction`) is not supported.
 */
const PREPARED_TEXTS = 1_000;
const statementNames = new Map<string, string>();
function statementName({ sql }: { sql: string }): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    // "" is pg's unnamed statement, parsed anew each time.
    if (statementNames.size >= PREPARED_TEXTS) return "";
    name = `airlock_${createHash("sha256").update(sql).digest("base64url").slice(0, 32)}`;
    statementNames.set(sql, name);
  }
  return name;
}

export function createPrismaClient(databaseUrl: string): PrismaClient {
  const base = new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl }, { statementNameGenerator: statementName }) });
  const chained = base.$extends({
    query: {
      auditEvent: {
        async $allOperations({ args, query }) {
          await sequenceAudit(base);
          return query(args);
        },
      },
    },
  });
  // Interactive transactions collect their commit hooks; the batch form runs no callback of ours.
  const client = new Proxy(chained, {
    get(target, prop) {
      if (prop !== "$transaction") return Reflect.get(target, prop);
      return (first: unknown, options?: unknown) =>
        typeof first === "function"
          ? withCommitHooks(() => (target.$transaction as (fn: unknown, options?: unknown) => Promise<unknown>)(first, options))
          : (target.$transaction as (batch: unknown, options?: unknown) => Promise<unknown>)(first, options);
    },
  });
  // Neither changes a type: the client is still a PrismaClient to its callers.
  return client as unknown as PrismaClient;
}

type CommitHooks = { open: boolean; hooks: (() => void)[] };
const commitHooks = new AsyncLocalStorage<CommitHooks>();

async function withCommitHooks<T>(transaction: () => Promise<T>): Promise<T> {
  const scope: CommitHooks = { open: true, hooks: [] };
  try {
    const result = await commitHooks.run(scope, transaction);
    for (const hook of scope.hooks) runHook(hook);
    return result;
  } finally {
    scope.open = false;
    scope.hooks.length = 0;
  }
}

function runHook(hook: () => void): void {
  try {
    hook();
  } catch (error) {
    console.error("a commit hook failed", error);
  }
}

/** Runs `hook` after the caller's transaction commits (never if it rolls back); outside a transaction, at once. */
export function afterCommit(hook: () => void): void {
  const scope = commitHooks.getStore();
  if (scope?.open) scope.hooks.push(hook);
  else runHook(hook);
}

const cache = globalThis as typeof globalThis & { __airlockPrisma?: PrismaClient };

export function prisma(): PrismaClient {
  if (!cache.__airlockPrisma) {
    const url = env().DATABASE_URL;
    if (!url) {
      throw new Error("DATABASE_URL is not set. `npm start` sets it for the database it starts; otherwise set it to a PostgreSQL URL.");
    }
    cache.__airlockPrisma = createPrismaClient(url);
  }
  return cache.__airlockPrisma;
}

/** A database handle for read models and services that open their own transactions. */
export type Db = PrismaClient;
