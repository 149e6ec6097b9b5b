import type { Metadata } from "next";
import { CreateAgentForm, RevokeAgentButton } from "@/components/agents/agent-forms";
import { Badge, Card, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import { listAgents } from "@/lib/auth/agents";
import { userPage } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { createAgentAction, revokeAgentAction } from "./actions";

export const metadata: Metadata = { title: "Agents" };

export default userPage("agents:manage", async function AgentsPage(user) {
  const agents = await listAgents(prisma());
  return (
    <>
      <PageHeader title="Agents" description="Agents reach the MCP endpoint with a bearer token; nobody may approve a run of an agent they own." />
      <Card title="New agent" className="mb-6">
        <CreateAgentForm action={createAgentAction} defaultOwner={user.email} />
      </Card>
      {agents.length === 0 ? (
        <EmptyState title="No agents yet">
          Create one above or with <code>npx airlock agent add --name N --owner EMAIL</code>.
        </EmptyState>
      ) : (
        <Table caption="Agents" headers={["Name", "Owner", "Token", "Scopes", "Last used", "State", ""]}>
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
                <Td>{agent.revokedAt ? null : <RevokeAgentButton name={agent.name} action={revokeAgentAction} />}</Td>
              </tr>
            );
          })}
        </Table>
      )}
    </>
  );
});
