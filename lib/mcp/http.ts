/**
 * The agent door: `/api/mcp` over Streamable HTTP.
 *
 * Each request is handled by a fresh MCP server and a stateless transport: nothing about one
 * request (its agent, its scopes) can leak into another, and any number of web processes can
 * serve the same agent. Per request, in this order:
 *  1. DNS-rebinding guard: the Host header (exactly `name[:port]`) and the Origin, when sent, must
 *     name this deployment — loopback names, AIRLOCK_HOST, AIRLOCK_PUBLIC_URL's host, or
 *     AIRLOCK_ALLOWED_HOSTS (lib/auth/hosts.ts, as for the console) — else 403;
 *  2. bearer authentication (an accepted token remembered while nothing about tokens or agents
 *     changes: lib/auth/token-cache.ts): 401 with `WWW-Authenticate: Bearer resource_metadata=…` (RFC 9728).
 *     A missing token, a header that is not `Bearer <one token>` and a refused token are told
 *     apart (send a token / send it so / this token is not accepted); an unknown, revoked, expired or malformed token gets one and the same answer, so
 *     callers cannot tell which;
 *     every token sent and refused is audited as `auth.token_rejected`, aggregated per token
 *     prefix and minute under a global cap (lib/auth/token-rejections.ts);
 *  3. GET (the optional server-to-client stream) is 405 with `Allow: POST`: nothing is ever pushed;
 *  4. the tools this connection offers, from the URL's query (`?tools=a,b`, selectTools in
 *     lib/mcp/server.ts): a malformed selection is 400, naming the problem;
 *  5. the body, read here with the transport's cap (413 past it, -32700 when it is not JSON): an
 *     empty batch, or a batch in which two requests share an id, is refused whole (-32600) before
 *     anything in it runs — the transport answers requests by id, so of two sharing one both ran
 *     and one was answered;
 *  6. the MCP exchange itself, where each tool checks its own scope (lib/mcp/server.ts); a client
 *     that disconnects closes it, ending any wait its request was in.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { authenticateAgentToken } from "@/lib/auth/agents";
import { hostViolation, originViolation } from "@/lib/auth/hosts";
import { tokenRejections } from "@/lib/auth/token-rejections";
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { isAppError } from "@/lib/errors";
import { readJsonBody } from "@/lib/json-body";
import { readyTokenCache } from "@/lib/runs/runtime";
import { createMcpServer, selectTools } from "./server";

export const MAX_MCP_BODY_BYTES = 1024 * 1024;

/** null when the request names this deployment (lib/auth/hosts.ts); otherwise why not. */
export function rebindingViolation(request: Request): string | null {
  return hostViolation(request) ?? originViolation(request);
}

/** The public base URL: AIRLOCK_PUBLIC_URL, or what the (already validated) request was sent to. */
export function publicBaseUrl(request: Request): string {
  const configured = env().AIRLOCK_PUBLIC_URL;
  if (configured) return configured.replace(/\/$/, "");
  const url = new URL(request.url);
  const host = request.headers.get("host") ?? url.host;
  return `${url.protocol}//${host}`;
}

function jsonError(status: number, message: string, headers: Record<string, string> = {}, code = status === 401 ? -32001 : -32000): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}

/** Why a batch is refused before anything in it runs (see the header), or null. */
function batchRefusal(body: unknown): string | null {
  if (!Array.isArray(body)) return null;
  if (body.length === 0) return "the batch is empty";
  const ids = new Set<string>();
  for (const message of body) {
    if (message === null || typeof message !== "object" || !("method" in message) || !("id" in message)) continue;
    const id = JSON.stringify(message.id) ?? "undefined";
    if (ids.has(id)) return `two requests in the batch share the id ${id.slice(0, 100)}; give each its own`;
    ids.add(id);
  }
  return null;
}

/** The POST body, or the answer refusing it. */
async function readMessages(request: Request): Promise<{ body: unknown } | { refused: Response }> {
  // A compressed body would be read as bytes that are not UTF-8 (a misleading parse error): said as it is.
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    return { refused: jsonError(415, `Unsupported Media Type: Content-Encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed`) };
  }
  let body: unknown;
  try {
    body = await readJsonBody(request, MAX_MCP_BODY_BYTES);
  } catch (error) {
    if (isAppError(error) && error.code === "payload_too_large") return { refused: jsonError(413, `Payload Too Large: ${error.message}`) };
    if (isAppError(error) && error.code === "bad_request") return { refused: jsonError(400, `Parse error: ${error.message}`, {}, -32700) };
    throw error;
  }
  const refusal = batchRefusal(body);
  return refusal ? { refused: jsonError(400, `Invalid Request: ${refusal}`, {}, -32600) } : { body };
}

/** Whether the client can read this door's answers, which are always JSON: it accepts JSON (application/json, any application type, any type) or says nothing. */
function acceptsJson(request: Request): boolean {
  const accept = request.headers.get("accept");
  return accept === null || /application\/json|application\/\*|\*\/\*/.test(accept);
}

/**
 * The request as the transport checks it. The spec has a client accept both JSON and an event
 * stream, and the SDK's transport refuses anything else with 406; this door only ever answers
 * JSON, so a client that accepts JSON (acceptsJson) is served too. The body was read already
 * (handed over parsed), so the copy carries none.
 */
function withJsonAccepted(request: Request): Request {
  const accept = request.headers.get("accept");
  // What SDK clients send: as it is, no copy on every request.
  if (accept?.includes("application/json") && accept.includes("text/event-stream")) return request;
  const headers = new Headers(request.headers);
  headers.set("accept", "application/json, text/event-stream");
  return new Request(request.url, { method: request.method, headers, signal: request.signal });
}

export async function handleMcpRequest(request: Request): Promise<Response> {
  const violation = rebindingViolation(request);
  if (violation) return jsonError(403, `Forbidden: ${violation}`);

  const header = request.headers.get("authorization") ?? "";
  const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  const agent = token ? await authenticateAgentToken(prisma(), token, readyTokenCache()) : null;
  if (!agent) {
    if (token) await tokenRejections().reject(token);
    const metadata = `${publicBaseUrl(request)}/.well-known/oauth-protected-resource`;
    const challenge = token
      ? `Bearer error="invalid_token", error_description="The token is unknown, revoked or expired", resource_metadata="${metadata}"`
      : `Bearer resource_metadata="${metadata}"`;
    const message = token
      ? "Unauthorized: the bearer token is not accepted (unknown, revoked or expired); ask an Airlock admin for an agent token"
      : header
        ? "Unauthorized: the Authorization header is not one bearer token; send Authorization: Bearer <agent token>"
        : "Unauthorized: no token; send Authorization: Bearer <agent token>";
    return jsonError(401, message, { "WWW-Authenticate": challenge });
  }

  // No server-initiated stream is offered (every request has its own server): the spec's answer to
  // GET is 405, and it tells clients to stop opening one, instead of reconnecting every second.
  if (request.method === "GET") return jsonError(405, "Method Not Allowed: this endpoint offers no event stream; send requests with POST", { Allow: "POST" });

  let offered: ReturnType<typeof selectTools>;
  try {
    offered = selectTools(new URL(request.url).searchParams);
  } catch (error) {
    if (isAppError(error) && error.code === "bad_request") return jsonError(400, `Bad Request: ${error.message}`);
    throw error;
  }
  // One that accepts only what this door never sends (only an event stream, HTML) could not read the answer.
  if (!acceptsJson(request))
    return jsonError(406, "Not Acceptable: this endpoint answers with application/json; send Accept: application/json, text/event-stream");
  let parsedBody: unknown;
  if (request.method === "POST") {
    const read = await readMessages(request);
    if ("refused" in read) return read.refused;
    parsedBody = read.body;
  }
  const server = createMcpServer({ agent, baseUrl: publicBaseUrl(request) }, offered);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
  });
  await server.connect(transport);
  // A client that goes away ends its request's waits (get_run, tasks/result): closing the server
  // aborts its handlers, instead of polling for a run nobody will be told about. Nobody reads the
  // answer then; the transport, which would wait for the aborted handlers, is not waited for.
  let abandoned!: () => void;
  const gone = new Promise<Response>((resolve) => {
    abandoned = () => {
      server.close().catch((error: unknown) => console.error("closing an abandoned MCP request's server failed", error));
      resolve(jsonError(499, "Client Closed Request"));
    };
  });
  if (request.signal.aborted) abandoned();
  request.signal.addEventListener("abort", abandoned, { once: true });
  try {
    return await Promise.race([
      transport.handleRequest(withJsonAccepted(request), { authInfo: { token: token!, clientId: agent.id, scopes: [...agent.scopes] }, parsedBody }),
      gone,
    ]);
  } finally {
    request.signal.removeEventListener("abort", abandoned);
    // With JSON responses the answer is complete once handleRequest returns: it goes out while the server closes.
    server.close().catch((error: unknown) => console.error("closing an MCP request's server failed", error));
  }
}
