import type { Metadata } from "next";
import { DiffView } from "@/components/run/code-view";
import { AcceptToolForm } from "@/components/tools/accept-form";
import { Badge, Card, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { hasScope } from "@/lib/contracts/scopes";
import { userPage } from "@/lib/auth/user-route";
import { listUpstreamServers } from "@/lib/broker/registry-presenter";
import { prisma } from "@/lib/db";
import { acceptToolAction } from "./actions";
import { Inert } from "@/components/ui/inert";

export const metadata: Metadata = { title: "Tools" };

export default userPage("tools:read", async function ToolsPage(user) {
  const servers = await listUpstreamServers(prisma());
  const canManage = hasScope(user, "tools:manage");
  const quarantined = servers.flatMap((server) => server.tools.filter((t) => t.quarantined).map((tool) => ({ server: server.name, tool })));
  return (
    <>
      <PageHeader
        title="Tools"
        description="Upstream MCP servers whose tools scripts may call through the broker. A tool whose definition changes is quarantined until an admin accepts it."
      />
      {quarantined.length > 0 ? (
        <section aria-labelledby="quarantine" className="mb-8">
          <h2 id="quarantine" className="mb-3 text-lg font-semibold text-red-800">
            Quarantined ({quarantined.length})
          </h2>
          {quarantined.map(({ server, tool }) => (
            <Card key={`${server}.${tool.name}`} title={`${server}.${tool.name}`} className="mb-4">
              <p className="mb-2 text-sm text-slate-600">What changed since the definition was pinned:</p>
              {tool.change ? <DiffView diff={tool.change} label={`Changes to ${server}.${tool.name}`} sameText="No visible change." /> : null}
              {canManage ? <AcceptToolForm server={server} tool={tool.name} schemaHash={tool.schemaHash} action={acceptToolAction} /> : null}
            </Card>
          ))}
        </section>
      ) : null}
      {servers.length === 0 ? (
        <EmptyState title="No upstream servers registered">Configure them in airlock.config.json; see the README.</EmptyState>
      ) : (
        servers.map((server) => (
          <section key={server.name} className="mb-6">
            <h2 className="mb-2 font-semibold">
              {server.name} <Badge>{server.transport}</Badge> <Badge tone="warn">{server.dataClass}</Badge>
            </h2>
            <Table caption={`Tools of ${server.name}`} headers={["Tool", "Description", "Annotations", "Data class", "State"]}>
              {server.tools.map((tool) => (
                <tr key={tool.name} data-testid={`tool-${server.name}.${tool.name}`}>
                  <Td className="font-mono text-xs">
                    <Inert text={tool.name} />
                  </Td>
                  <Td>
                    <Inert text={tool.description} />
                  </Td>
                  <Td className="text-xs">{tool.annotations.join(", ") || "none declared"}</Td>
                  <Td>{tool.dataClass}</Td>
                  <Td>{tool.quarantined ? <Badge tone="bad">quarantined</Badge> : <Badge tone="good">pinned</Badge>}</Td>
                </tr>
              ))}
            </Table>
          </section>
        ))
      )}
    </>
  );
});
