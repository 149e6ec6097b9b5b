import type { Metadata } from "next";
import { Badge, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { listAgents } from "@/lib/auth/agents";
import { requireUserPage } from "@/lib/auth/session";
import { prisma } from "@/lib/db";

export const metadata: Metadata = { title: "Agents" };

export default async function AgentsPage() {
  await requireUserPage("agents:manage");
  const agents = await listAgents(prisma());
  return (
    <>
      <PageHeader title="Agents" description="Agents reach the MCP endpoint with a bearer token. Create and revoke them with `npx airlock agent`." />
      {agents.length === 0 ? (
        <EmptyState title="No agents yet">Create one with <code>npx airlock agent add --name N --owner EMAIL</code>.</EmptyState>
      ) : (
        <Table caption="Agents" headers={["Name", "Owner", "Token", "Scopes", "Last used", "State"]}>
          {agents.map((agent) => {
            const token = agent.tokens.at(-1);
            return (
              <tr key={agent.id} data-testid={`agent-${agent.name}`}>
                <Td className="font-medium">{agent.name}</Td>
                <Td>{agent.owner}</Td>
                <Td className="font-mono text-xs">{token ? `${token.prefix}…` : "—"}</Td>
                <Td className="text-xs">{token?.scopes.join(", ") ?? "—"}</Td>
                <Td>{token?.lastUsedAt ? <Time iso={token.lastUsedAt} /> : "never"}</Td>
                <Td>{agent.revokedAt ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>}</Td>
              </tr>
            );
          })}
        </Table>
      )}
    </>
  );
}
