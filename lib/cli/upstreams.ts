/**
 * The upstreams as `airlock exec` and `airlock tools` see them: the config (--config, else the
 * server's, lib/runs/runtime resolveConfig) and a tool broker whose pins are the database's
 * (DbPinStore), like the server's — a tool an admin accepted is trusted here too, and a tool seen
 * changed here is quarantined for everyone. The database is the one every CLI command uses
 * (withCliDatabase); the configured servers and the tools the broker listed are recorded in it
 * (upsertServers, syncRegistry) as the server does at start, so the console shows what the CLI saw.
 */
import { ConfigError, ToolBroker, loadConfig, type AirlockConfig } from "@/lib/broker";
import { DbPinStore, syncRegistry, upsertServers } from "@/lib/broker/db-registry";
import { resolveConfig } from "@/lib/runs/runtime";
import { withCliDatabase } from "./database";
import type { CliIo } from "./io";

/**
 * The config, or null after printing why it cannot be used (the command then exits 1). A `pins` key
 * in the file is reported on stderr (once) and ignored.
 */
export function loadCliConfig(path: string | undefined, io: CliIo, command: string): AirlockConfig | null {
  try {
    return path ? loadConfig(path, { warn: io.stderr }) : resolveConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr(`airlock ${command}: ${error.message}\n`);
    return null;
  }
}

/**
 * Connects the configured upstreams with the database's pins and runs `fn` with the broker, closed
 * after. When an upstream cannot be connected, prints why and returns 1.
 */
export async function withCliBroker(config: AirlockConfig, io: CliIo, command: string, fn: (broker: ToolBroker) => Promise<number>): Promise<number> {
  return withCliDatabase(async (db) => {
    await upsertServers(db, config);
    let broker: ToolBroker;
    try {
      broker = await ToolBroker.connect(config, { pins: new DbPinStore(db) });
    } catch (error) {
      io.stderr(`airlock ${command}: upstreams unavailable: ${(error as Error).message}\n`);
      return 1;
    }
    try {
      await syncRegistry(db, broker.tools());
      return await fn(broker);
    } finally {
      await broker.close();
    }
  });
}
