/**
 * Test fixture (lib/runs/faults-web-kill.test.ts): a web process to SIGKILL. It serves the agent
 * door, `handleMcpRequest` (lib/mcp/http.ts, the function app/api/mcp/route.ts exports), with
 * node:http on 127.0.0.1:PORT, after starting the run runtime at boot as instrumentation.ts does
 * (lib/runs/boot.ts: broker, and with AIRLOCK_IN_PROCESS_WORKER the in-process executor). The same
 * request path and the same executor as `next start`, without Next itself: a build takes minutes,
 * and what a SIGKILL interrupts here is the submission and the execution, not page rendering.
 * Like Next's server, it logs an unhandled rejection instead of exiting on it (the test looks for
 * that line). Prints "web ready on <port>" once it accepts requests.
 */
import { createServer } from "node:http";
import { env } from "@/lib/env";
import { handleMcpRequest } from "@/lib/mcp/http";
import { startAppRuntimeAtBoot } from "@/lib/runs/boot";

process.on("unhandledRejection", (reason) => console.error("unhandledRejection:", reason));

await startAppRuntimeAtBoot();
const { PORT } = env();

const server = createServer((req, res) => {
  void (async () => {
    try {
      if (!req.url?.startsWith("/api/mcp")) {
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const request = new Request(`http://${req.headers.host ?? `127.0.0.1:${PORT}`}${req.url}`, {
        method: req.method,
        headers,
        body: hasBody ? Buffer.concat(chunks) : undefined,
      });
      const response = await handleMcpRequest(request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      console.error("web process: request failed", error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  })();
});
server.listen(PORT, "127.0.0.1", () => console.log(`web ready on ${PORT}`));
