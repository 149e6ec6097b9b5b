/**
 * Prisma's schema engine (the thing behind `prisma migrate deploy` / `migrate diff`), run as
 * WebAssembly inside this process and talking to PostgreSQL through @prisma/adapter-pg.
 *
 * Why: Prisma 7's CLI only drives the native `schema-engine` binary, which is downloaded from
 * Prisma's binary host at install time and cannot be fetched on every machine Airlock runs on.
 * The same engine ships as `@prisma/schema-engine-wasm` (pinned to the CLI's engine commit), so
 * migrations are applied by Prisma's own code: same `_prisma_migrations` table, same checksums,
 * same advisory lock; `prisma migrate deploy` with the native engine accepts the result.
 *
 * How it is loaded mirrors Prisma's own `wasmSchemaEngineLoader` (packages/internals): the
 * wasm-bindgen "bundler" glue `schema_engine_bg.js` is imported and the `.wasm` next to it is
 * instantiated by hand, once per process (wasm-bindgen keeps global state; a second instance of
 * the same glue crashes).
 *
 * Guarantees:
 * - every pg pool the engine opens is closed when `withSchemaEngine` returns (or throws);
 * - the engine never gets a shadow database: adapter-pg's `connectToShadowDb` re-uses the
 *   connection string, which would point the "shadow" at the real database. Nothing here needs
 *   one (deploy does not; `diff` between two schema files does not).
 * - a migration script runs as ONE simple-protocol query, as with the native engine: PostgreSQL
 *   then runs it in a single implicit transaction (all or nothing), and dollar-quoted function
 *   bodies survive. adapter-pg 7.10's own `executeScript` splits the script on every ";" and
 *   runs the pieces one by one, outside a transaction — it breaks on any trigger function and
 *   leaves a half-applied migration behind on failure. (See withWholeScriptExecution.)
 * - the engine's internal timers (its 10 s advisory-lock timeout, never cleared) are unref'd so
 *   a CLI exits as soon as its work is done instead of 10 s later.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type * as Wasm from "@prisma/schema-engine-wasm";

export type SchemaEngine = Wasm.SchemaEngine;
export type { MigrationList, DiffTarget } from "@prisma/schema-engine-wasm";

export const NO_FILTERS: Wasm.SchemaFilter = { externalTables: [], externalEnums: [] };

type Glue = typeof import("@prisma/schema-engine-wasm/schema_engine_bg");

let loaded: Promise<Glue["SchemaEngine"]> | undefined;

async function instantiate(): Promise<Glue["SchemaEngine"]> {
  const require = createRequire(import.meta.url);
  const gluePath = require.resolve("@prisma/schema-engine-wasm/schema_engine_bg");
  const glue = (await import(pathToFileURL(gluePath).href)) as Glue & Record<string, unknown>;
  const bytes = await readFile(join(dirname(gluePath), "schema_engine_bg.wasm"));
  const imports: Record<string, unknown> = { ...glue };
  for (const name of Object.keys(glue)) {
    if (name.startsWith("__wbg_setTimeout_")) {
      imports[name] = (callback: () => void, ms: number) => {
        const timer = setTimeout(callback, ms >>> 0);
        timer.unref();
        return timer;
      };
    }
  }
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
    "./schema_engine_bg.js": imports as WebAssembly.ModuleImports,
  });
  glue.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  return glue.SchemaEngine;
}

function loadSchemaEngineClass(): Promise<Glue["SchemaEngine"]> {
  loaded ??= instantiate().catch((error: unknown) => {
    loaded = undefined;
    throw new Error("Could not load Prisma's WebAssembly schema engine (@prisma/schema-engine-wasm)", {
      cause: error,
    });
  });
  return loaded;
}

type PgAdapter = Awaited<ReturnType<PrismaPg["connect"]>>;

/** Replaces adapter-pg's `executeScript` (split on ";") with a single multi-statement query. */
function withWholeScriptExecution(adapter: PgAdapter): PgAdapter {
  const pool = adapter.underlyingDriver();
  // `onError` maps a pg error to the DriverAdapterError the engine understands, and throws.
  const toDriverError = (adapter as unknown as { onError(error: unknown): never }).onError.bind(adapter);
  adapter.executeScript = async (script: string) => {
    try {
      await pool.query(script);
    } catch (error) {
      toDriverError(error);
    }
  };
  return adapter;
}

/**
 * Runs `fn` with a schema engine connected to `databaseUrl`, then closes every connection it
 * opened. The engine connects eagerly, so the database must be reachable.
 */
export async function withSchemaEngine<T>(databaseUrl: string, fn: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const SchemaEngineClass = await loadSchemaEngineClass();
  const pg = new PrismaPg({ connectionString: databaseUrl });
  const opened: SqlDriverAdapter[] = [];
  const factory: SqlMigrationAwareDriverAdapterFactory = {
    provider: pg.provider,
    adapterName: pg.adapterName,
    async connect() {
      const adapter = await pg.connect();
      opened.push(adapter);
      return withWholeScriptExecution(adapter);
    },
    async connectToShadowDb() {
      throw new Error("Airlock does not give Prisma's schema engine a shadow database");
    },
  };
  let engine: SchemaEngine | undefined;
  try {
    engine = await SchemaEngineClass.new(
      { datamodels: undefined },
      () => {}, // engine debug log; nothing here needs it
      bindMigrationAwareSqlAdapterFactory(factory),
    );
    return await fn(engine);
  } finally {
    engine?.free();
    await Promise.allSettled(opened.map((adapter) => adapter.dispose()));
  }
}
