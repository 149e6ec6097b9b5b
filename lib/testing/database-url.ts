/**
 * Small helpers shared by the test wiring (global-setup.ts, db.ts): point an admin URL at
 * another database, and run one admin statement on a short-lived connection.
 */
import pg from "pg";

/** `url` with its database name replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** Database names made here are generated ([a-z0-9_]); anything else is refused, not quoted. */
export function assertSafeName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`Unsafe database name: ${name}`);
  return name;
}

export async function withAdminClient<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
