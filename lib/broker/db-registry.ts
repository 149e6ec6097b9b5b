/**
 * The broker's registry mirrored in PostgreSQL, so pins survive restarts and every web process
 * and worker agrees on which tools are quarantined, and the console can show them.
 *
 * DbPinStore keeps each tool's accepted hash in UpstreamTool.pinnedHash (trust on first use: a
 * tool seen for the first time is pinned as it is). syncRegistry writes what the broker listed —
 * descriptions, schemas, annotations, data classes, current hash and quarantine — after connect.
 * Upstream credentials never reach the database: only command/args or the URL are stored.
 */
import type { Db } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { AirlockConfig } from "./config";
import type { PinStore } from "./pins";
import type { ToolInfo } from "./types";

function endpointOf(server: AirlockConfig["servers"][string]): Prisma.InputJsonObject {
  return server.transport === "stdio" ? { command: server.command, args: server.args } : { url: server.url };
}

/** Creates or updates one row per configured upstream server. */
export async function upsertServers(db: Db, config: AirlockConfig): Promise<void> {
  for (const [name, server] of Object.entries(config.servers)) {
    await db.upstreamServer.upsert({
      where: { name },
      create: { name, transport: server.transport, endpoint: endpointOf(server), dataClass: server.dataClass },
      update: { transport: server.transport, endpoint: endpointOf(server), dataClass: server.dataClass },
    });
  }
}

export class DbPinStore implements PinStore {
  constructor(private readonly db: Db) {}

  async get(server: string, tool: string): Promise<string | undefined> {
    const row = await this.db.upstreamTool.findFirst({ where: { name: tool, server: { name: server } }, select: { pinnedHash: true } });
    return row?.pinnedHash;
  }

  async set(server: string, tool: string, hash: string): Promise<void> {
    const serverRow = await this.db.upstreamServer.findUniqueOrThrow({ where: { name: server }, select: { id: true } });
    await this.db.upstreamTool.upsert({
      where: { serverId_name: { serverId: serverRow.id, name: tool } },
      create: { serverId: serverRow.id, name: tool, description: "", inputSchema: {}, schemaHash: hash, pinnedHash: hash },
      // The row's quarantine flag is set by acceptTool and syncRegistry, never by a pin write.
      update: { pinnedHash: hash },
    });
  }
}

/** What a pin covers, as shown to an admin deciding whether to accept a changed tool. */
export function definitionOf(tool: ToolInfo): Prisma.InputJsonObject {
  return {
    description: tool.description,
    inputSchema: tool.inputSchema as Prisma.InputJsonObject,
    outputSchema: (tool.outputSchema ?? null) as Prisma.InputJsonObject | null,
    annotations: tool.annotations as Prisma.InputJsonObject,
  };
}

/**
 * Mirrors the broker's view of every tool into UpstreamTool rows. While a tool is trusted its
 * pinned definition follows it; once quarantined, the pinned definition stays as it was accepted.
 */
export async function syncRegistry(db: Db, tools: readonly ToolInfo[]): Promise<void> {
  const servers = new Map((await db.upstreamServer.findMany({ select: { id: true, name: true } })).map((s) => [s.name, s.id]));
  for (const tool of tools) {
    const serverId = servers.get(tool.server);
    if (!serverId) continue;
    const data = {
      description: tool.description,
      inputSchema: tool.inputSchema as Prisma.InputJsonObject,
      outputSchema: (tool.outputSchema ?? undefined) as Prisma.InputJsonObject | undefined,
      annotations: tool.annotations as Prisma.InputJsonObject,
      dataClass: tool.dataClass,
      schemaHash: tool.hash,
      quarantined: tool.quarantined,
    };
    const pinned = tool.quarantined ? {} : { pinnedDefinition: definitionOf(tool) };
    await db.upstreamTool.upsert({
      where: { serverId_name: { serverId, name: tool.name } },
      create: { serverId, name: tool.name, pinnedHash: tool.hash, ...data, ...pinned },
      update: { ...data, ...pinned },
    });
  }
}
