/**
 * The agent door: `/api/mcp` over Streamable HTTP.
 *
 * Each request is handled by a fresh MCP server and a stateless transport: nothing about one
 * request (its agent, its scopes) can leak into another, and any number of web processes can
 * serve the same agent. Per request, in this order:
 *  1. DNS-rebinding guard: the Host header (and Origin, when sent) must name this deployment —
 *     loopback names, AIRLOCK_PUBLIC_URL's host, or AIRLOCK_ALLOWED_HOSTS — else 403;
 *  2. bearer authentication: a missing, unknown, revoked or expired token gets the same 401 with
 *     `WWW-Authenticate: Bearer resource_metadata=…` (RFC 9728) — callers cannot tell them apart;
 *     every token sent and refused is audited as `auth.token_rejected`, aggregated per token
 *     prefix and minute under a global cap (lib/auth/token-rejections.ts);
 *  3. the MCP exchange itself, where each tool checks its own scope (lib/mcp/server.ts).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticateAgentToken } from "@/lib/auth/agents";
import { tokenRejections } from "@/lib/auth/token-rejections";
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { createMcpServer } from "./server";

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]", "::1"];
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

function allowedHostnames(): Set<string> {
  const config = env();
  const hosts = new Set(LOOPBACK_HOSTS);
  if (config.AIRLOCK_PUBLIC_URL) hosts.add(new URL(config.AIRLOCK_PUBLIC_URL).hostname.toLowerCase());
  for (const host of config.AIRLOCK_ALLOWED_HOSTS?.split(",") ?? []) {
    if (host.trim()) hosts.add(host.trim().toLowerCase());
  }
  return hosts;
}

function hostnameOf(hostHeader: string): string | null {
  try {
    return new URL(`http://${hostHeader}`).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** null when the request names this deployment; otherwise why not. */
export function rebindingViolation(request: Request): string | null {
  const allowed = allowedHostnames();
  const host = request.headers.get("host");
  const hostname = host ? hostnameOf(host) : null;
  if (!hostname || !allowed.has(hostname)) return `Host ${JSON.stringify(host)} is not allowed`;
  const origin = request.headers.get("origin");
  if (origin !== null) {
    let originHost: string | null = null;
    try {
      originHost = new URL(origin).hostname.toLowerCase();
    } catch {
      /* unparseable origin: refused below */
    }
    if (!originHost || !allowed.has(originHost)) return `Origin ${JSON.stringify(origin)} is not allowed`;
  }
  return null;
}

/** The public base URL: AIRLOCK_PUBLIC_URL, or what the (already validated) request was sent to. */
export function publicBaseUrl(request: Request): string {
  const configured = env().AIRLOCK_PUBLIC_URL;
  if (configured) return configured.replace(/\/$/, "");
  const url = new URL(request.url);
  const host = request.headers.get("host") ?? url.host;
  return `${url.protocol}//${host}`;
}

function jsonError(status: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: "2.0", error: { code: status === 401 ? -32001 : -32000, message }, id: null }, { status, headers });
}

export async function handleMcpRequest(request: Request): Promise<Response> {
  const violation = rebindingViolation(request);
  if (violation) return jsonError(403, `Forbidden: ${violation}`);

  const header = request.headers.get("authorization") ?? "";
  const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  const agent = token ? await authenticateAgentToken(prisma(), token) : null;
  if (!agent) {
    if (token) await tokenRejections().reject(token);
    const metadata = `${publicBaseUrl(request)}/.well-known/oauth-protected-resource`;
    const challenge = token
      ? `Bearer error="invalid_token", error_description="The token is unknown, revoked or expired", resource_metadata="${metadata}"`
      : `Bearer resource_metadata="${metadata}"`;
    return jsonError(401, "Unauthorized: send Authorization: Bearer <agent token>", { "WWW-Authenticate": challenge });
  }

  const server = createMcpServer({ agent, baseUrl: publicBaseUrl(request) });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, {
      authInfo: { token: token!, clientId: agent.id, scopes: [...agent.scopes] },
    });
  } finally {
    // With JSON responses the answer is complete once handleRequest returns.
    await server.close();
  }
}
