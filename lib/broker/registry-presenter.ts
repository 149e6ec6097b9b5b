/**
 * Read model of registered upstream servers and their tools for the console: what changed for each
 * quarantined tool (pinned definition vs what the upstream serves now; a tool never accepted shows
 * its whole definition as new), as inert text; which admin asked to accept the definition shown (a
 * request for an older one is not shown); and which facts were verified by whom: who accepted the
 * pinned definition and when, each hint and the data class as relied on, marked where an override
 * replaced the upstream's claim or the config, with who proposed and who confirmed it, and the
 * override waiting for a second admin.
 */
import "server-only";
import type { Db } from "@/lib/db";
import { diffLines, type LineDiff } from "@/lib/untrusted/diff";
import { inertJson, inertText } from "@/lib/untrusted/inert";
import { OVERRIDE_HINTS, storedOverrideFacts, type OverrideFacts, type OverrideHint } from "./overrides";

export type FactItem = { hint: OverrideHint; label: string; value: boolean | null; claimed: boolean | null; overridden: boolean };

export type OverrideItem = { id: string; facts: string[]; proposedBy: { id: string; email: string }; proposedAt: string };

export type ToolItem = {
  name: string;
  description: string;
  dataClass: string;
  /** The config's data class, before any override. */
  configDataClass: string;
  dataClassOverridden: boolean;
  facts: FactItem[];
  quarantined: boolean;
  /** Only for quarantined tools: "new_tool" when no definition of it was ever accepted. */
  quarantineReason: "new_tool" | "hash_changed" | null;
  schemaHash: string;
  /** Only for quarantined tools: pinned definition → current one. */
  change: LineDiff | null;
  /** Only for quarantined tools: the admin who asked to accept this definition; a second admin's acceptance pins it. */
  acceptanceRequestedBy: { id: string; email: string } | null;
  /** Who accepted the pinned definition (two admins, asker first, or system:seed) and when; null if not recorded. */
  accepted: { by: string[]; at: string } | null;
  /** The override in force, with who proposed and who confirmed it. */
  override: (OverrideItem & { confirmedBy: string; confirmedAt: string }) | null;
  /** The override waiting for a second admin's confirmation. */
  proposal: OverrideItem | null;
};

export type UpstreamServerItem = { name: string; transport: string; dataClass: string; tools: ToolItem[] };

const LABELS: Record<OverrideHint, string> = {
  readOnlyHint: "readOnly",
  destructiveHint: "destructive",
  idempotentHint: "idempotent",
  openWorldHint: "openWorld",
};

const asBoolean = (value: unknown) => (typeof value === "boolean" ? value : null);

/** "readOnly: false", "data class: pii": what an override sets, for people. */
function describeFacts(facts: OverrideFacts): string[] {
  const lines = OVERRIDE_HINTS.filter((hint) => facts.annotations[hint] !== undefined).map((hint) => `${LABELS[hint]}: ${String(facts.annotations[hint])}`);
  if (facts.dataClass) lines.push(`data class: ${facts.dataClass}`);
  return lines.length > 0 ? lines : ["the upstream's claims and the config (no override)"];
}

export async function listUpstreamServers(db: Db): Promise<UpstreamServerItem[]> {
  const person = { select: { id: true, email: true } } as const;
  const rows = await db.upstreamServer.findMany({
    orderBy: { name: "asc" },
    include: {
      tools: {
        orderBy: { name: "asc" },
        include: {
          acceptanceRequestedBy: person,
          overrides: {
            where: { OR: [{ confirmedAt: { not: null } }, { withdrawnAt: null }] },
            orderBy: [{ confirmedAt: { sort: "desc", nulls: "first" } }],
            take: 2,
            include: { proposedBy: person, confirmedBy: person },
          },
        },
      },
    },
  });
  return rows.map((server) => ({
    name: server.name,
    transport: server.transport,
    dataClass: server.dataClass,
    tools: server.tools.map((tool) => {
      const annotations = (tool.annotations ?? {}) as Record<string, unknown>;
      const claimed = (tool.claimedAnnotations ?? {}) as Record<string, unknown>;
      const current = { description: tool.description, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, annotations: tool.claimedAnnotations };
      const waiting = tool.overrides.find((o) => !o.confirmedAt) ?? null;
      const inForce = tool.overrides.find((o) => o.confirmedAt) ?? null;
      const inForceFacts = inForce ? storedOverrideFacts(inForce.facts, inForce.id) : null;
      const configDataClass = tool.configDataClass ?? server.dataClass;
      const item = (o: NonNullable<typeof waiting>): OverrideItem => ({
        id: o.id,
        facts: describeFacts(storedOverrideFacts(o.facts, o.id)),
        proposedBy: o.proposedBy,
        proposedAt: o.proposedAt.toISOString(),
      });
      return {
        name: tool.name,
        description: tool.description,
        dataClass: tool.dataClass ?? server.dataClass,
        configDataClass,
        dataClassOverridden: inForceFacts?.dataClass !== undefined,
        facts: OVERRIDE_HINTS.map((hint) => ({
          hint,
          label: LABELS[hint],
          value: asBoolean(annotations[hint]),
          claimed: asBoolean(claimed[hint]),
          overridden: inForceFacts?.annotations[hint] !== undefined,
        })),
        quarantined: tool.quarantined,
        quarantineReason: tool.quarantined ? (tool.pinnedHash === null ? "new_tool" : "hash_changed") : null,
        schemaHash: tool.schemaHash,
        change: tool.quarantined ? diffLines(inertJson(tool.pinnedDefinition ?? {}), inertJson(current)) : null,
        acceptanceRequestedBy: tool.quarantined && tool.acceptanceRequestedHash === tool.schemaHash ? tool.acceptanceRequestedBy : null,
        accepted: tool.acceptedAt ? { by: tool.acceptedBy.map((label) => inertText(label, 200)), at: tool.acceptedAt.toISOString() } : null,
        override:
          inForce && inForce.confirmedAt
            ? { ...item(inForce), confirmedBy: inForce.confirmedBy?.email ?? "a removed admin", confirmedAt: inForce.confirmedAt.toISOString() }
            : null,
        proposal: waiting ? item(waiting) : null,
      };
    }),
  }));
}
