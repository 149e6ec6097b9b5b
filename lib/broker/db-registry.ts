/**
 * The broker's registry mirrored in PostgreSQL, so pins survive restarts and every web process
 * and worker agrees on which tools are quarantined, and the console can show them.
 *
 * First start: the servers registered while none is (by the seed, `system:seed`, or else by the
 * first process to read the config, `system:config`) are marked so that the first listing of their
 * tools is accepted as it is, audited `tool.accepted` by that actor; syncRegistry then clears the
 * mark. Afterwards nothing is trusted on first sight: DbPinStore answers NEVER_ACCEPTED for a tool
 * nobody accepted (a tool an upstream adds, every tool of a server added to the config later), so
 * the broker quarantines it until two admins accept it (lib/broker/admin.ts), and DbPinStore.set
 * refuses to pin anything else than a first listing or what acceptTool already pinned.
 *
 * syncRegistry writes what the broker listed — descriptions, schemas, the upstream's annotations,
 * current hash and quarantine — and applies each tool's newest confirmed override (annotations,
 * data class: lib/broker/overrides.ts) to the rows and to the broker's own tools, in place, so
 * `broker.tools()`, the declarations, analysis and policy rely on the accepted facts.
 * Upstream credentials never reach the database: only command/args or the URL are stored.
 */
import { recordAudit } from "@/lib/audit/record";
import { actorLabel, type Actor } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import type { Prisma } from "@/lib/generated/prisma/client";
import { BrokerError } from "./broker";
import type { AirlockConfig } from "./config";
import { applyOverride, storedOverrideFacts, type OverrideFacts, type ToolClaims } from "./overrides";
import { NEVER_ACCEPTED, type PinStore } from "./pins";
import type { ToolInfo } from "./types";

export type SystemActor = Extract<Actor, { type: "system" }>;

/** Registers the config's servers when no process registered any yet. */
const CONFIG_ACTOR: SystemActor = { type: "system", name: "config" };
/** Arbitrary constant naming the advisory lock that serializes server registration. */
const REGISTRY_LOCK = 7_231_004_418;

function endpointOf(server: AirlockConfig["servers"][string]): Prisma.InputJsonObject {
  return server.transport === "stdio" ? { command: server.command, args: server.args } : { url: server.url };
}

/**
 * Creates or updates one row per configured server. When no server is registered yet (first
 * start) the new ones are marked: the first listing of their tools is accepted by `actor`. A
 * server created later gets no mark. Creations are audited (`upstream.registered`).
 */
export async function registerServers(tx: Tx, config: AirlockConfig, actor: SystemActor): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${REGISTRY_LOCK})`;
  const firstStart = (await tx.upstreamServer.count()) === 0;
  for (const [name, server] of Object.entries(config.servers)) {
    const fields = { transport: server.transport, endpoint: endpointOf(server), dataClass: server.dataClass };
    const existing = await tx.upstreamServer.findUnique({ where: { name }, select: { id: true } });
    if (existing) {
      await tx.upstreamServer.update({ where: { id: existing.id }, data: fields });
      continue;
    }
    const firstListingAcceptedBy = firstStart ? actorLabel(actor) : null;
    const created = await tx.upstreamServer.create({ data: { name, ...fields, firstListingAcceptedBy }, select: { id: true } });
    await recordAudit(tx, {
      actor,
      action: "upstream.registered",
      subject: { type: "upstream_server", id: created.id },
      data: { server: name, transport: server.transport, firstListingAcceptedBy },
    });
  }
}

/** registerServers in its own transaction, as the config (the runtime and the CLI at start). */
export async function upsertServers(db: Db, config: AirlockConfig): Promise<void> {
  await db.$transaction((tx) => registerServers(tx, config, CONFIG_ACTOR));
}

/** The system actor a label written by registerServers names. */
function systemActor(label: string): SystemActor {
  return { type: "system", name: label.replace(/^system:/, "") };
}

export class DbPinStore implements PinStore {
  constructor(private readonly db: Db) {}

  /** The accepted hash; undefined only on a first start's first listing; else NEVER_ACCEPTED. */
  async get(server: string, tool: string): Promise<string | undefined> {
    const row = await this.db.upstreamTool.findFirst({ where: { name: tool, server: { name: server } }, select: { pinnedHash: true } });
    if (row?.pinnedHash) return row.pinnedHash;
    const registered = await this.db.upstreamServer.findUnique({ where: { name: server }, select: { firstListingAcceptedBy: true } });
    return registered?.firstListingAcceptedBy ? undefined : NEVER_ACCEPTED;
  }

  async pinnedMany(tools: readonly { server: string; tool: string }[]): Promise<Map<string, string>> {
    if (tools.length === 0) return new Map();
    const rows = await this.db.upstreamTool.findMany({
      where: { OR: tools.map(({ server, tool }) => ({ name: tool, server: { name: server } })), pinnedHash: { not: null } },
      select: { name: true, pinnedHash: true, server: { select: { name: true } } },
    });
    return new Map(rows.map((row) => [`${row.server.name}.${row.name}`, row.pinnedHash!]));
  }

  /**
   * Pins a tool of a first start's first listing (audited as accepted by the first start's actor),
   * or confirms the pin acceptTool already wrote. Anything else is refused: pins change only when
   * two admins accept.
   */
  async set(server: string, tool: string, hash: string): Promise<void> {
    await this.db.$transaction(async (tx) => {
      const serverRow = await tx.upstreamServer.findUniqueOrThrow({ where: { name: server }, select: { id: true, firstListingAcceptedBy: true } });
      const where = { serverId_name: { serverId: serverRow.id, name: tool } };
      const row = await tx.upstreamTool.findUnique({ where, select: { pinnedHash: true } });
      if (row?.pinnedHash === hash) return;
      const acceptedBy = serverRow.firstListingAcceptedBy;
      if (row?.pinnedHash || !acceptedBy) throw new BrokerError(`${server}.${tool} is pinned only when two admins accept it`);
      const accepted = { pinnedHash: hash, acceptedAt: new Date(), acceptedBy: [acceptedBy] };
      const pinned = await tx.upstreamTool.upsert({
        where,
        create: { serverId: serverRow.id, name: tool, description: "", inputSchema: {}, schemaHash: hash, ...accepted },
        // The row's quarantine flag is set by acceptTool and syncRegistry, never by a pin write.
        update: accepted,
        select: { id: true },
      });
      await recordAudit(tx, {
        actor: systemActor(acceptedBy),
        action: "tool.accepted",
        subject: { type: "tool", id: pinned.id },
        data: { server, tool, acceptedHash: hash, firstListing: true },
      });
    });
  }
}

/** The upstream's annotations and the config's data class, as the broker listed them (before overrides). */
const claims = new WeakMap<ToolInfo, ToolClaims>();

function claimsOf(tool: ToolInfo): ToolClaims {
  let claimed = claims.get(tool);
  if (!claimed) {
    claimed = { annotations: tool.annotations, dataClass: tool.dataClass };
    claims.set(tool, claimed);
  }
  return claimed;
}

/** What a pin covers, as shown to an admin deciding whether to accept a changed tool. */
function definitionOf(tool: ToolInfo): Prisma.InputJsonObject {
  return {
    description: tool.description,
    inputSchema: tool.inputSchema as Prisma.InputJsonObject,
    outputSchema: (tool.outputSchema ?? null) as Prisma.InputJsonObject | null,
    annotations: claimsOf(tool).annotations as Prisma.InputJsonObject,
  };
}

/** The newest confirmed override of every tool that has one, by `server.tool`. */
async function confirmedOverrides(db: Db): Promise<Map<string, OverrideFacts>> {
  // One round trip (every submission refreshes the registry), oldest confirmation first.
  const rows = await db.$queryRaw<{ id: string; facts: Prisma.JsonValue; server: string; tool: string }[]>`
    SELECT o.id, o.facts, s.name AS server, t.name AS tool
    FROM "ToolOverride" o JOIN "UpstreamTool" t ON t.id = o."toolId" JOIN "UpstreamServer" s ON s.id = t."serverId"
    WHERE o."confirmedAt" IS NOT NULL
    ORDER BY o."confirmedAt", o.id`;
  return new Map(rows.map((row) => [`${row.server}.${row.tool}`, storedOverrideFacts(row.facts, row.id)]));
}

function applyTo(tools: readonly ToolInfo[], overrides: Map<string, OverrideFacts>): void {
  for (const tool of tools) {
    const effective = applyOverride(claimsOf(tool), overrides.get(`${tool.server}.${tool.name}`) ?? null);
    tool.annotations = effective.annotations;
    tool.dataClass = effective.dataClass;
  }
}

/** Applies the confirmed overrides to the broker's tools in place (after a confirmation in this process). */
export async function applyOverrides(db: Db, tools: readonly ToolInfo[]): Promise<void> {
  applyTo(tools, await confirmedOverrides(db));
}

/**
 * Mirrors the broker's view of every tool into UpstreamTool rows, applies the confirmed overrides,
 * and ends the first start's trust in first listings. While a tool is trusted its pinned definition
 * follows it; once quarantined, the pinned definition stays as it was accepted; a new row of a
 * quarantined tool has no pin.
 */
export async function syncRegistry(db: Db, tools: readonly ToolInfo[]): Promise<void> {
  const servers = new Map((await db.upstreamServer.findMany({ select: { id: true, name: true } })).map((s) => [s.name, s.id]));
  const overrides = await confirmedOverrides(db);
  for (const tool of tools) {
    const serverId = servers.get(tool.server);
    if (!serverId) continue;
    const claimed = claimsOf(tool);
    const effective = applyOverride(claimed, overrides.get(`${tool.server}.${tool.name}`) ?? null);
    const data = {
      description: tool.description,
      inputSchema: tool.inputSchema as Prisma.InputJsonObject,
      outputSchema: (tool.outputSchema ?? undefined) as Prisma.InputJsonObject | undefined,
      claimedAnnotations: claimed.annotations as Prisma.InputJsonObject,
      configDataClass: claimed.dataClass,
      annotations: effective.annotations as Prisma.InputJsonObject,
      dataClass: effective.dataClass,
      schemaHash: tool.hash,
      quarantined: tool.quarantined,
    };
    const pinned = tool.quarantined ? {} : { pinnedDefinition: definitionOf(tool) };
    await db.upstreamTool.upsert({
      where: { serverId_name: { serverId, name: tool.name } },
      create: { serverId, name: tool.name, pinnedHash: tool.quarantined ? null : tool.hash, ...data, ...pinned },
      update: { ...data, ...pinned },
    });
  }
  applyTo(tools, overrides);
  await db.upstreamServer.updateMany({ where: { firstListingAcceptedBy: { not: null } }, data: { firstListingAcceptedBy: null } });
}
