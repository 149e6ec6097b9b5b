/**
 * The upstreams as `airlock exec` and `airlock tools` see them: the config (--config, else the
 * server's, lib/runs/runtime resolveConfig) and a tool broker whose pins are the database's
 * (DbPinStore), like the server's — a tool an admin accepted is trusted here too, and a tool seen
 * changed here is quarantined for everyone. The database is the one every CLI command uses
 * (withCliDatabase); the configured servers and the tools the broker listed are recorded in it
 * (upsertServers, syncRegistry) as the server does at start, so the console shows what the CLI saw.
 *
 * `exec --dev` gets its own broker (withDevBroker) and writes nothing to any database, so the
 * unaudited door leaves no trace in the server's registry: a tool the server's database knows keeps
 * its pin there (one the server quarantined stays quarantined here); a tool it does not know, or
 * every tool when there is no database, is pinned on first sight, in memory, for this command only.
 */
import { ConfigError, ToolBroker, loadConfig, type AirlockConfig } from "@/lib/broker";
import { DbPinStore, syncRegistry, upsertServers } from "@/lib/broker/db-registry";
import { NEVER_ACCEPTED, type PinStore } from "@/lib/broker/pins";
import type { Db } from "@/lib/db";
import { resolveConfig } from "@/lib/runs/runtime";
import { NoAirlockDatabase, withCliDatabase } from "./database";
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

/** The server's pins, read only; tools it does not know are pinned as first seen, in memory. */
class DevPins implements PinStore {
  private readonly seen = new Map<string, string>();
  constructor(private readonly db: Db | null) {}

  async get(server: string, tool: string): Promise<string | undefined> {
    const seen = this.seen.get(`${server}\u0000${tool}`);
    if (seen !== undefined || !this.db) return seen;
    const row = await this.db.upstreamTool.findFirst({ where: { name: tool, server: { name: server } }, select: { pinnedHash: true } });
    return row ? (row.pinnedHash ?? NEVER_ACCEPTED) : undefined;
  }

  async set(server: string, tool: string, hash: string): Promise<void> {
    this.seen.set(`${server}\u0000${tool}`, hash);
  }
}

async function withBroker(config: AirlockConfig, pins: PinStore, io: CliIo, command: string, fn: (broker: ToolBroker) => Promise<number>): Promise<number> {
  let broker: ToolBroker;
  try {
    broker = await ToolBroker.connect(config, { pins });
  } catch (error) {
    io.stderr(`airlock ${command}: upstreams unavailable: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    return await fn(broker);
  } finally {
    await broker.close();
  }
}

/** `exec --dev`: the config's upstreams with DevPins; an existing database is read, never written or created. */
export async function withDevBroker(config: AirlockConfig, io: CliIo, command: string, fn: (broker: ToolBroker) => Promise<number>): Promise<number> {
  try {
    return await withCliDatabase((db) => withBroker(config, new DevPins(db), io, command, fn), { mustExist: true });
  } catch (error) {
    if (!(error instanceof NoAirlockDatabase)) throw error;
  }
  return withBroker(config, new DevPins(null), io, command, fn);
}

/**
 * Connects the configured upstreams with the database's pins and runs `fn` with the broker, closed
 * after. When an upstream cannot be connected, prints why and returns 1.
 */
export async function withCliBroker(config: AirlockConfig, io: CliIo, command: string, fn: (broker: ToolBroker) => Promise<number>): Promise<number> {
  return withCliDatabase(async (db) => {
    await upsertServers(db, config);
    return withBroker(config, new DbPinStore(db), io, command, async (broker) => {
      await syncRegistry(db, broker.tools());
      return fn(broker);
    });
  });
}
