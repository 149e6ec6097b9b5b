/**
 * Airlock's MCP endpoint for a benchmark, in this process: a throwaway PostgreSQL, migrated and
 * seeded with the demo (policy, agent, token), the handler Next calls behind a plain node:http
 * server (Next's own routing is not included), the in-process worker executing runs (strict
 * isolation, warm pool), and an SDK client connected as the demo agent. `env` is set before
 * anything reads it and overrides these defaults: AIRLOCK_CONFIG for other upstreams than the
 * demo ledger, AIRLOCK_IN_PROCESS_WORKER=false for an endpoint that only decides.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { applyMigrations } from "@/lib/db/migrate";
import { startPostgres } from "@/lib/db/postgres-server";
import { createPrismaClient } from "@/lib/db";
import { seedDemo } from "@/lib/demo/seed";
import { logOnlyWhenAsked } from "@/lib/log";
import { setEnvForChildren } from "@/lib/env";

/** The three tools a code-mode agent uses (discover, run, wait), selected in the endpoint's URL. */
export const CODE_MODE_QUERY = "?tools=search_tools,submit_run,get_run";

export type BenchEndpoint = {
  /** Connected as the demo agent to /api/mcp, every tool offered. */
  client: Client;
  /** Another client as the demo agent, to `/api/mcp<query>` (e.g. `?tools=…`, lib/mcp/server.ts). */
  connect(query?: string): Promise<Client>;
  db: ReturnType<typeof createPrismaClient>;
  agentName: string;
  dataDir: string;
  close(): Promise<void>;
};

export async function startBenchEndpoint(env: Record<string, string> = {}): Promise<BenchEndpoint> {
  // A benchmark's stdout is its JSON: run changes are not logged there (lib/log.ts).
  logOnlyWhenAsked();
  const postgres = await startPostgres({ persistent: false });
  await applyMigrations(postgres.url);
  const db = createPrismaClient(postgres.url);
  const credentials = await seedDemo(db, { password: "bench-password-123" });
  const dataDir = await mkdtemp(join(tmpdir(), "airlock-bench-"));
  setEnvForChildren({
    DATABASE_URL: postgres.url,
    AIRLOCK_DATA_DIR: dataDir,
    AIRLOCK_BUDGET_RUNS_PER_HOUR: "1000000",
    AIRLOCK_IN_PROCESS_WORKER: "true",
    ...env,
  });
  const { handleMcpRequest } = await import("@/lib/mcp/http");
  const { appRuntime } = await import("@/lib/runs/runtime");
  const { prisma } = await import("@/lib/db");

  const server = createServer(async (req, res) => {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : (Readable.toWeb(req) as ReadableStream);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      body,
      duplex: "half",
    } as RequestInit);
    const response = await handleMcpRequest(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const clients: Client[] = [];
  const connect = async (query = "") => {
    const client = new Client({ name: "bench-airlock", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://localhost:${port}/api/mcp${query}`), {
        requestInit: { headers: { Authorization: `Bearer ${credentials!.agent.token}` } },
      }),
    );
    clients.push(client);
    return client;
  };
  const client = await connect();
  return {
    client,
    connect,
    db,
    agentName: credentials!.agent.name,
    dataDir,
    async close() {
      for (const c of clients) await c.close();
      server.close();
      await (await appRuntime(prisma())).close();
      await prisma().$disconnect();
      await db.$disconnect();
      await postgres.stop();
    },
  };
}
