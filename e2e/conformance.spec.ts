/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) against /api/mcp.
 * The suite sends no credentials, so a loopback proxy on `localhost` adds the demo agent's bearer
 * header and forwards everything else untouched — including foreign Host/Origin headers, which
 * the dns-rebinding scenario sends and our endpoint must refuse.
 */
import { execFile } from "node:child_process";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { readFileSync } from "node:fs";
import type { DemoCredentials } from "../lib/demo/seed";
import { expect, test } from "./fixtures";
import { STATE_FILE } from "./global-setup";

const run = promisify(execFile);
const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

function startProxy(target: URL, token: string): Promise<Server> {
  const server = createServer((req, res) => {
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, authorization: `Bearer ${token}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

test.describe("MCP conformance", () => {
  let proxy: Server;
  test.beforeAll(async ({ baseURL }) => {
    const { credentials } = JSON.parse(readFileSync(STATE_FILE, "utf8")) as { credentials: DemoCredentials };
    proxy = await startProxy(new URL(baseURL!), credentials.agent.token);
  });
  test.afterAll(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

  for (const scenario of SCENARIOS) {
    test(`passes ${scenario}`, async () => {
      test.setTimeout(120_000);
      const port = (proxy.address() as AddressInfo).port;
      const bin = createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/dist/index.js");
      const { stdout, stderr } = await run(process.execPath, [bin, "server", "--url", `http://localhost:${port}/api/mcp`, "--scenario", scenario], {
        timeout: 100_000,
      }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
        throw new Error(`conformance ${scenario} failed (exit ${error.code}):\n${error.stdout}\n${error.stderr}`);
      });
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(`${stdout}${stderr}`);
      expect(summary, `no result summary in:\n${stdout}\n${stderr}`).not.toBeNull();
      const [, passed, total, failed] = summary!;
      expect(Number(total)).toBeGreaterThan(0);
      expect(Number(failed)).toBe(0);
      expect(passed).toBe(total);
    });
  }
});
