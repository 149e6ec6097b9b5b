/** Read model of registered upstream servers and their tools for the console. */
import "server-only";
import type { Db } from "@/lib/db";

export type UpstreamServerItem = {
  name: string;
  transport: string;
  dataClass: string;
  tools: { name: string; description: string; dataClass: string | null; quarantined: boolean }[];
};

export async function listUpstreamServers(db: Db): Promise<UpstreamServerItem[]> {
  const rows = await db.upstreamServer.findMany({
    orderBy: { name: "asc" },
    include: { tools: { orderBy: { name: "asc" } } },
  });
  return rows.map((server) => ({
    name: server.name,
    transport: server.transport,
    dataClass: server.dataClass,
    tools: server.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      dataClass: tool.dataClass,
      quarantined: tool.quarantined,
    })),
  }));
}
