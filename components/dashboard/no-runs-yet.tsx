/** What the dashboard shows before any agent has submitted a run: how to connect one over MCP. */

function Snippet({ label, text }: { label: string; text: string }) {
  return (
    <div>
      <p className="text-xs font-medium text-slate-600">{label}</p>
      <pre className="mt-1 rounded-md bg-slate-950 px-3 py-2 font-mono text-xs whitespace-pre-wrap text-slate-100 wrap-anywhere">{text}</pre>
    </div>
  );
}

export function NoRunsYet({ endpoint }: { endpoint: string }) {
  const header = "Authorization: Bearer alk_…";
  const config = { mcpServers: { airlock: { url: endpoint, headers: { Authorization: "Bearer alk_…" } } } };
  return (
    <div className="space-y-3 text-sm text-slate-700" data-testid="no-runs-yet">
      <p className="text-base font-medium text-slate-900">No runs yet</p>
      <p>
        A run appears here when an agent submits a script. Point an MCP client (Streamable HTTP) at <code className="font-mono break-all">{endpoint}</code> and
        send the agent&apos;s token in the header <code className="font-mono">{header}</code>. The demo agent&apos;s token was printed when Airlock first
        started (and kept in <code className="font-mono">demo-credentials.txt</code> in its data directory, <code className="font-mono">.airlock</code> by
        default); an admin creates agents and their tokens on the Agents page.
      </p>
      <Snippet label="Claude Code" text={`claude mcp add --transport http airlock ${endpoint} --header "${header}"`} />
      <Snippet label="Cursor (~/.cursor/mcp.json) and other clients' JSON configuration" text={JSON.stringify(config, null, 2)} />
      <p>
        Then ask the agent to find tools with <code className="font-mono">search_tools</code> and run a script with{" "}
        <code className="font-mono">submit_run</code>; with the demo ledger, for example{" "}
        <code className="font-mono">return (await tools.ledger.listInvoices(&#123; status: &quot;overdue&quot; &#125;)).invoices.length;</code>
      </p>
    </div>
  );
}
