/**
 * `airlock doctor [--json]`: checks a deployment and says how to fix what it finds. Each check is
 * OK, WARN or FAIL; the command exits 1 when any check FAILs, else 0. It changes nothing: no
 * migration, pin, audit event or file of Airlock's is written.
 *
 * The database is DATABASE_URL's, else the running `npm start`'s embedded one; with neither, the
 * database checks FAIL (nothing to check), saying so.
 *
 * Checks:
 * - sandbox: the isolation level this host gives the configured one (strict needs bubblewrap);
 *   permission-only by allowDegraded is a WARN, a level that cannot be met a FAIL;
 * - database role: the app's role must be unable to switch off the audit log's append-only
 *   triggers (not a superuser, not the owner of the audit tables, no session_replication_role);
 * - audit keys: the signing key and the checkpoints must live outside AIRLOCK_DATA_DIR, which
 *   holds the embedded database (whoever rewrites the log must not also hold its anchor): a WARN
 *   for the embedded default, a FAIL with DATABASE_URL;
 * - clock: the skew between this host and PostgreSQL (audit times and deadlines are compared
 *   across both): over 1 s WARN, over 5 s FAIL;
 * - migrations: the ones this build has that the database has not applied: a FAIL with
 *   DATABASE_URL (`airlock db migrate`), a WARN for the embedded database (`npm start` applies them);
 * - upstreams: every configured server answers and lists its tools, and each tool's definition is
 *   the accepted one; a quarantined tool is a WARN naming it, an unreachable server a FAIL.
 */
import { existsSync } from "node:fs";
import { resolve, relative, isAbsolute } from "node:path";
import pg from "pg";
import { checkpointConfigFromEnv, loadSigningKey } from "@/lib/audit/checkpoints";
import { DbPinStore } from "@/lib/broker/db-registry";
import { ToolBroker } from "@/lib/broker";
import { createPrismaClient } from "@/lib/db";
import { pendingMigrations } from "@/lib/db/migrate";
import { privilegeWarning } from "@/lib/db/roles";
import { env } from "@/lib/env";
import { checkIsolation, describeIsolation } from "@/lib/runs/isolation";
import { resolveConfig } from "@/lib/runs/runtime";
import { runningEmbeddedUrl } from "./database";
import { parseCliArgs, type CliIo } from "./io";

export type CheckStatus = "OK" | "WARN" | "FAIL";
export type Check = { name: string; status: CheckStatus; detail: string; fix?: string };

const USAGE = "Usage: airlock doctor [--json]\n";
const SKEW_WARN_MS = 1_000;
const SKEW_FAIL_MS = 5_000;

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
const inside = (dir: string, path: string) => {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
};

async function sandboxCheck(): Promise<Check> {
  if (!env().AIRLOCK_IN_PROCESS_WORKER) {
    // A web process that executes nothing needs no sandbox; a worker refuses to start without its own.
    return {
      name: "sandbox",
      status: "OK",
      detail: "this process executes no runs (AIRLOCK_IN_PROCESS_WORKER=false); each worker probes its sandbox as it starts",
    };
  }
  try {
    const check = await checkIsolation(resolveConfig().sandbox, { execute: true });
    if (check.degraded) {
      return { name: "sandbox", status: "WARN", detail: describeIsolation(check), fix: "Install bubblewrap (apt-get install -y bubblewrap) to run at strict." };
    }
    return { name: "sandbox", status: "OK", detail: describeIsolation(check) };
  } catch (error) {
    return { name: "sandbox", status: "FAIL", detail: message(error) };
  }
}

async function auditKeysCheck(external: boolean): Promise<Check> {
  const dataDir = resolve(env().AIRLOCK_DATA_DIR);
  const { keyFile, dir } = checkpointConfigFromEnv();
  // A key file that is there must be the key (a missing one is generated at the first checkpoint).
  if (existsSync(keyFile)) {
    try {
      await loadSigningKey(keyFile);
    } catch (error) {
      return {
        name: "audit keys",
        status: "FAIL",
        detail: message(error),
        fix: "Restore the signing key, or point AIRLOCK_AUDIT_KEY_FILE at it (docs/audit.md).",
      };
    }
  }
  const within = [keyFile, dir].filter((path) => inside(dataDir, path));
  if (within.length === 0) return { name: "audit keys", status: "OK", detail: `signing key ${keyFile} and checkpoints ${dir} are outside ${dataDir}` };
  return {
    name: "audit keys",
    status: external ? "FAIL" : "WARN",
    detail: `${within.join(" and ")} ${within.length > 1 ? "are" : "is"} inside the data directory ${dataDir}, beside the database: whoever can rewrite the log there also holds what proves it`,
    fix: "Set AIRLOCK_AUDIT_KEY_FILE and AIRLOCK_AUDIT_CHECKPOINT_DIR to a place off the database host (docs/audit.md).",
  };
}

async function clockCheck(url: string): Promise<Check> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const before = Date.now();
    const { rows } = await client.query<{ now: Date }>("SELECT clock_timestamp() AS now");
    const after = Date.now();
    const skew = Math.round(rows[0]!.now.getTime() - (before + after) / 2);
    const detail = `PostgreSQL's clock is ${Math.abs(skew)} ms ${skew >= 0 ? "ahead of" : "behind"} this host's (measured within ${after - before} ms)`;
    const fix = "Synchronize both hosts' clocks (NTP): deadlines and audit times are compared across them.";
    if (Math.abs(skew) > SKEW_FAIL_MS) return { name: "clock", status: "FAIL", detail, fix };
    if (Math.abs(skew) > SKEW_WARN_MS) return { name: "clock", status: "WARN", detail, fix };
    return { name: "clock", status: "OK", detail };
  } finally {
    await client.end().catch(() => {});
  }
}

async function migrationsCheck(url: string, external: boolean): Promise<Check> {
  const pending = await pendingMigrations(url);
  if (pending.length === 0) return { name: "migrations", status: "OK", detail: "every migration of this build is applied" };
  return {
    name: "migrations",
    status: external ? "FAIL" : "WARN",
    detail: `${pending.length} not applied: ${pending.join(", ")}`,
    fix: external ? "Run `npx airlock db migrate` as the schema's owner (AIRLOCK_MIGRATION_DATABASE_URL)." : "`npm start` applies them when it starts.",
  };
}

async function upstreamsCheck(url: string): Promise<Check> {
  const db = createPrismaClient(url);
  const pins = new DbPinStore(db);
  let broker: ToolBroker | undefined;
  try {
    // Read-only: a pin the first start would write is not written here. Partial, as the server
    // starts: every upstream that does not answer is named, and the others are still checked.
    broker = await ToolBroker.connect(resolveConfig(), { pins: { get: (server, tool) => pins.get(server, tool), set: async () => {} }, partial: true });
    const tools = broker.tools();
    const quarantined = tools.filter((tool) => tool.quarantined).map((tool) => `${tool.server}.${tool.name} (${tool.quarantineReason})`);
    const servers = new Set(tools.map((tool) => tool.server)).size;
    const unmatched = broker.unmatchedToolSettings();
    const unavailable = [...broker.unavailableServers().values()];
    if (unavailable.length > 0 || unmatched.length > 0 || quarantined.length > 0) {
      // Every problem at once: none hides another.
      const problems = [
        ...unavailable,
        ...unmatched,
        ...(quarantined.length > 0 ? [`quarantined until two admins accept them: ${quarantined.join(", ")}`] : []),
      ];
      const fixes = [
        ...(unavailable.length > 0 ? ["Start the upstream, or fix its entry in airlock.config.json."] : []),
        ...(unmatched.length > 0
          ? ["Correct the tool names under `tools` in airlock.config.json (`npx airlock tools` lists the names each server serves)."]
          : []),
        ...(quarantined.length > 0 ? ["Review and accept the quarantined tools on the Tools page, or with `npx airlock tools accept`."] : []),
      ];
      return {
        name: "upstreams",
        status: unavailable.length > 0 ? "FAIL" : "WARN",
        detail: `${servers} server(s) answered, ${tools.length} tools; ${problems.join("; ")}`,
        fix: fixes.join(" "),
      };
    }
    return { name: "upstreams", status: "OK", detail: `${servers} server(s) answered; their ${tools.length} tools are the accepted definitions` };
  } catch (error) {
    return { name: "upstreams", status: "FAIL", detail: message(error), fix: "Start the upstream, or fix its entry in airlock.config.json." };
  } finally {
    await broker?.close();
    await db.$disconnect();
  }
}

async function databaseChecks(url: string, external: boolean): Promise<Check[]> {
  try {
    const warning = await privilegeWarning(url);
    const role: Check = warning
      ? { name: "database role", status: "FAIL", detail: warning }
      : { name: "database role", status: "OK", detail: "the app's role cannot switch off the audit log's append-only triggers" };
    return [role, await auditKeysCheck(external), await clockCheck(url), await migrationsCheck(url, external), await upstreamsCheck(url)];
  } catch (error) {
    return [{ name: "database", status: "FAIL", detail: `cannot check the database: ${message(error)}` }];
  }
}

/** Every check, in order. */
export async function runDoctor(): Promise<Check[]> {
  const config = env();
  const external = Boolean(config.DATABASE_URL);
  const url = config.DATABASE_URL ?? (await runningEmbeddedUrl(resolve(config.AIRLOCK_DATA_DIR)));
  const checks = [await sandboxCheck()];
  if (!url) {
    checks.push({
      name: "database",
      status: "FAIL",
      detail: `no database to check: DATABASE_URL is not set and npm start is not running with ${resolve(config.AIRLOCK_DATA_DIR)}`,
      fix: "Run the doctor while `npm start` runs, or set DATABASE_URL.",
    });
    return checks;
  }
  return [...checks, ...(await databaseChecks(url, external))];
}

export async function doctorCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(args, { json: { type: "boolean" } }, USAGE);
  const checks = await runDoctor();
  const failed = checks.some((check) => check.status === "FAIL");
  if (values.json) {
    io.stdout(JSON.stringify({ ok: !failed, checks }, null, 2) + "\n");
  } else {
    for (const check of checks) {
      io.stdout(`${check.status.padEnd(4)}  ${check.name}: ${check.detail}\n`);
      if (check.fix && check.status !== "OK") io.stdout(`      fix: ${check.fix}\n`);
    }
  }
  return failed ? 1 : 0;
}
