import type { Metadata } from "next";
import { DiffView } from "@/components/run/code-view";
import { AcceptToolForm } from "@/components/tools/accept-form";
import { ConfirmOverrideForm, ProposeOverrideForm } from "@/components/tools/override-form";
import { Badge, Card, EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { Time } from "@/components/ui/time";
import { DATA_CLASSES } from "@/lib/contracts/data-classes";
import { hasScope } from "@/lib/contracts/scopes";
import { userPage } from "@/lib/auth/user-route";
import { listUpstreamServers, type ToolItem } from "@/lib/broker/registry-presenter";
import { prisma } from "@/lib/db";
import { acceptToolAction, confirmOverrideAction, proposeOverrideAction } from "./actions";

export const metadata: Metadata = { title: "Tools" };

const names = (people: string[]) => (people.length > 1 ? `${people.slice(0, -1).join(", ")} and ${people.at(-1)}` : (people[0] ?? ""));

/** The hints as relied on; an override is marked with what the upstream claims. */
function Facts({ tool }: { tool: ToolItem }) {
  const shown = tool.facts.filter((fact) => fact.value !== null || fact.overridden);
  if (shown.length === 0) return <>none declared</>;
  return (
    <ul>
      {shown.map((fact) => (
        <li key={fact.hint}>
          {fact.label}: {String(fact.value)}
          {fact.overridden ? (
            <>
              {" "}
              <Badge tone="warn" title={`The upstream says ${String(fact.claimed ?? "nothing")}`}>
                override
              </Badge>{" "}
              <span className="text-slate-500">(upstream: {fact.claimed === null ? "not declared" : String(fact.claimed)})</span>
            </>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** Who verified the facts: the acceptance of the pinned definition, and the override in force. */
function Verified({ tool }: { tool: ToolItem }) {
  return (
    <div className="space-y-1">
      <p>
        {tool.accepted ? (
          <>
            Accepted by <Inert text={names(tool.accepted.by)} /> at <Time iso={tool.accepted.at} />
          </>
        ) : tool.quarantined ? (
          "Not accepted"
        ) : (
          "Pinned before acceptances were recorded"
        )}
      </p>
      {tool.override ? (
        <p>
          Override proposed by {tool.override.proposedBy.email}, confirmed by {tool.override.confirmedBy} at <Time iso={tool.override.confirmedAt} />
        </p>
      ) : null}
    </div>
  );
}

export default userPage("tools:read", async function ToolsPage(user) {
  const servers = await listUpstreamServers(prisma());
  const canManage = hasScope(user, "tools:manage");
  const quarantined = servers.flatMap((server) => server.tools.filter((t) => t.quarantined).map((tool) => ({ server: server.name, tool })));
  const proposals = servers.flatMap((server) =>
    server.tools.flatMap((tool) => (tool.proposal ? [{ server: server.name, tool, proposal: tool.proposal }] : [])),
  );
  return (
    <>
      <PageHeader
        title="Tools"
        description="Upstream MCP servers whose tools scripts may call through the broker. A tool whose definition changes, a tool an upstream adds, and every tool of a server added after the first start are quarantined until two admins accept them: one asks, a second confirms. Admins can override a tool's hints and data class the same way; policy relies on the facts as accepted."
      />
      {quarantined.length > 0 ? (
        <section aria-labelledby="quarantine" className="mb-8">
          <h2 id="quarantine" className="mb-3 text-lg font-semibold text-red-800">
            Quarantined ({quarantined.length})
          </h2>
          {quarantined.map(({ server, tool }) => (
            <Card key={`${server}.${tool.name}`} title={`${server}.${tool.name}`} className="mb-4">
              <p className="mb-2 text-sm text-slate-600">
                {tool.quarantineReason === "new_tool"
                  ? "A new tool: no definition of it was ever accepted. Its whole definition, as the upstream serves it:"
                  : "What changed since the definition was pinned:"}
              </p>
              {tool.change ? <DiffView diff={tool.change} label={`Changes to ${server}.${tool.name}`} sameText="No visible change." /> : null}
              {tool.acceptanceRequestedBy?.id === user.id ? (
                <p role="status" className="mt-3 text-sm text-amber-800">
                  You asked to accept this definition; it is waiting for a second admin.
                </p>
              ) : canManage ? (
                <AcceptToolForm
                  server={server}
                  tool={tool.name}
                  schemaHash={tool.schemaHash}
                  requestedBy={tool.acceptanceRequestedBy?.email ?? null}
                  action={acceptToolAction}
                />
              ) : null}
            </Card>
          ))}
        </section>
      ) : null}
      {proposals.length > 0 ? (
        <section aria-labelledby="proposals" className="mb-8">
          <h2 id="proposals" className="mb-3 text-lg font-semibold text-amber-800">
            Overrides waiting for a second admin ({proposals.length})
          </h2>
          {proposals.map(({ server, tool, proposal }) => (
            <Card key={proposal.id} title={`${server}.${tool.name}`} className="mb-4">
              <p className="text-sm text-slate-700">
                {proposal.proposedBy.email} proposed at <Time iso={proposal.proposedAt} />: {proposal.facts.join("; ")}
              </p>
              {proposal.proposedBy.id === user.id ? (
                <p role="status" className="mt-3 text-sm text-amber-800">
                  You proposed this override; it is waiting for a second admin.
                </p>
              ) : canManage ? (
                <ConfirmOverrideForm server={server} tool={tool.name} overrideId={proposal.id} action={confirmOverrideAction} />
              ) : null}
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
            <Table caption={`Tools of ${server.name}`} headers={["Tool", "Description", "Annotations", "Data class", "Verified", "State"]}>
              {server.tools.map((tool) => (
                <tr key={tool.name} data-testid={`tool-${server.name}.${tool.name}`}>
                  <Td className="font-mono text-xs">
                    <Inert text={tool.name} />
                  </Td>
                  <Td>
                    <Inert text={tool.description} />
                  </Td>
                  <Td className="text-xs">
                    <Facts tool={tool} />
                  </Td>
                  <Td>
                    {tool.dataClass}
                    {tool.dataClassOverridden ? (
                      <>
                        {" "}
                        <Badge tone="warn">override</Badge> <span className="text-xs text-slate-500">(config: {tool.configDataClass})</span>
                      </>
                    ) : null}
                  </Td>
                  <Td className="text-xs">
                    <Verified tool={tool} />
                  </Td>
                  <Td>
                    {tool.quarantined ? (
                      <Badge tone="bad">{tool.quarantineReason === "new_tool" ? "quarantined: new" : "quarantined"}</Badge>
                    ) : (
                      <Badge tone="good">pinned</Badge>
                    )}
                  </Td>
                </tr>
              ))}
            </Table>
            {canManage && server.tools.length > 0 ? (
              <Card title={`Override a tool's facts (${server.name})`} className="mt-3">
                <ProposeOverrideForm
                  server={server.name}
                  tools={server.tools.map((tool) => tool.name)}
                  dataClasses={DATA_CLASSES}
                  action={proposeOverrideAction}
                />
              </Card>
            ) : null}
          </section>
        ))
      )}
    </>
  );
});
