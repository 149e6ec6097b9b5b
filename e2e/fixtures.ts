import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { test as base } from "@playwright/test";
import type { DemoCredentials } from "../lib/demo/seed";
import { STATE_FILE } from "./global-setup";
import { LoginPage } from "./pages/login-page";

/** The e2e server's database (superuser URL), its data directory (checkpoints, ledger state) and the seeded logins. */
type State = { databaseUrl: string; dataDir: string; credentials: DemoCredentials };

/**
 * Connects the MCP SDK's Client to `<baseURL><path>` with `Authorization: Bearer <token>`.
 * Defaults: the seeded demo agent's token, the tests' baseURL (pass another for a server of the
 * test's own) and `/api/mcp` (pass a query to select tools). Every client it makes is closed after
 * the test (or after the hook that made it); closing one earlier is fine.
 */
export type ConnectMcp = (token?: string, baseURL?: string, path?: string) => Promise<Client>;

type Fixtures = {
  state: State;
  loginPage: LoginPage;
  loginAs: (role: "admin" | "reviewer" | "compliance") => Promise<void>;
  connectMcp: ConnectMcp;
  /** An MCP client connected as the seeded demo agent. */
  mcpClient: Client;
};

export const test = base.extend<Fixtures>({
  state: async ({}, use) => {
    await use(JSON.parse(readFileSync(STATE_FILE, "utf8")) as State);
  },
  loginPage: async ({ page }, use) => {
    await use(new LoginPage(page));
  },
  loginAs: async ({ state, loginPage }, use) => {
    await use(async (role) => {
      const user = state.credentials.users.find((u) => u.role === role);
      if (!user) throw new Error(`no seeded ${role}`);
      await loginPage.goto();
      await loginPage.signIn(user.email, user.password);
      await loginPage.page.waitForURL((url) => url.pathname === "/");
    });
  },
  connectMcp: async ({ baseURL, state }, use) => {
    const clients: Client[] = [];
    await use(async (token = state.credentials.agent.token, url = baseURL, path = "/api/mcp") => {
      const client = new Client({ name: "airlock-e2e", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(path, url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      clients.push(client);
      return client;
    });
    for (const client of clients) await client.close();
  },
  mcpClient: async ({ connectMcp }, use) => {
    await use(await connectMcp());
  },
});

export { expect } from "@playwright/test";

/**
 * Waits, as an agent does with get_run, until a write that policy escalated has finished its plan
 * preview (status `previewing`); returns the status it reached (`pending_review` once the plan is
 * ready for reviewers).
 */
export async function afterPreview(client: Client, runId: string): Promise<string> {
  for (let i = 0; i < 6; i++) {
    // A look first: submit_run usually answered after the preview already.
    const waitSeconds = i === 0 ? 0 : 20;
    const result = (await client.callTool({ name: "get_run", arguments: { runId, waitSeconds } })) as { content: { text: string }[] };
    const status = (JSON.parse(result.content[0]!.text) as { status: string }).status;
    if (status !== "previewing") return status;
  }
  throw new Error(`run ${runId} is still previewing`);
}
