import type { Metadata } from "next";
import { Badge, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";
import { listUpstreamServers } from "@/lib/broker/registry-presenter";

export const metadata: Metadata = { title: "Tools" };

export default async function ToolsPage() {
  await requireUserPage("tools:read");
  const servers = await listUpstreamServers(prisma());
  return (
    <>
      <PageHeader title="Tools" description="Upstream MCP servers whose tools scripts may call through the broker." />
      {servers.length === 0 ? (
        <EmptyState title="No upstream servers registered">Configure them in airlock.config.json; see the README.</EmptyState>
      ) : (
        servers.map((server) => (
          <section key={server.name} className="mb-6">
            <h2 className="mb-2 font-semibold">
              {server.name} <Badge>{server.transport}</Badge> <Badge tone="warn">{server.dataClass}</Badge>
            </h2>
            <Table caption={`Tools of ${server.name}`} headers={["Tool", "Description", "Data class", "State"]}>
              {server.tools.map((tool) => (
                <tr key={tool.name}>
                  <Td className="font-mono text-xs">{tool.name}</Td>
                  <Td>{tool.description}</Td>
                  <Td>{tool.dataClass ?? server.dataClass}</Td>
                  <Td>{tool.quarantined ? <Badge tone="bad">quarantined</Badge> : <Badge tone="good">pinned</Badge>}</Td>
                </tr>
              ))}
            </Table>
          </section>
        ))
      )}
    </>
  );
}
