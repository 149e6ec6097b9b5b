/**
 * Read model of registered upstream servers and their tools for the console, with what changed
 * for each quarantined tool (pinned definition vs what the upstream serves now), as inert text.
 */
import "server-only";
import type { Db } from "@/lib/db";
import { diffLines, type LineDiff } from "@/lib/untrusted/diff";
import { inertJson } from "@/lib/untrusted/inert";

export type ToolItem = {
  name: string;
  description: string;
  dataClass: string;
  annotations: string[];
  quarantined: boolean;
  schemaHash: string;
  /** Only for quarantined tools: pinned definition → current one. */
  change: LineDiff | null;
};

export type UpstreamServerItem = { name: string; transport: string; dataClass: string; tools: ToolItem[] };

const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const;

export async function listUpstreamServers(db: Db): Promise<UpstreamServerItem[]> {
  const rows = await db.upstreamServer.findMany({ orderBy: { name: "asc" }, include: { tools: { orderBy: { name: "asc" } } } });
  return rows.map((server) => ({
    name: server.name,
    transport: server.transport,
    dataClass: server.dataClass,
    tools: server.tools.map((tool) => {
      const annotations = (tool.annotations ?? {}) as Record<string, unknown>;
      const current = { description: tool.description, inputSchema: tool.inputSchema, outputSchema: tool.outputSchema, annotations: tool.annotations };
      return {
        name: tool.name,
        description: tool.description,
        dataClass: tool.dataClass ?? server.dataClass,
        annotations: HINTS.filter((hint) => typeof annotations[hint] === "boolean").map((hint) => `${hint.replace("Hint", "")}: ${String(annotations[hint])}`),
        quarantined: tool.quarantined,
        schemaHash: tool.schemaHash,
        change: tool.quarantined ? diffLines(inertJson(tool.pinnedDefinition ?? {}), inertJson(current)) : null,
      };
    }),
  }));
}
