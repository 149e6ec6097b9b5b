/**
 * What OAuth-capable MCP clients look up before they talk to the agent door. Airlock's agents
 * authenticate with a bearer token an admin issues; there is no authorization server. A client
 * that has no token, or a refused one, follows the 401's `resource_metadata` (RFC 9728), finds no
 * authorization server there, and tries this origin's well-known paths and `/register` anyway:
 * those answer JSON, saying how to get a token, so the client prints that instead of an HTML page.
 *
 * - `protectedResourceMetadata`: the metadata, at `/.well-known/oauth-protected-resource` and at
 *   that path with the endpoint's own path appended (`…/api/mcp`, where RFC 9728 puts it);
 * - `noAuthorizationServer`: 404 with `error` and `error_description`, for the authorization
 *   server's and OpenID's metadata (at the origin and under the endpoint's path), for dynamic
 *   client registration and for the authorization and token endpoints a client guesses.
 */
import { publicBaseUrl } from "./http";

export const MCP_PATH = "/api/mcp";

export function protectedResourceMetadata(request: Request): Response {
  const base = publicBaseUrl(request);
  return Response.json({
    resource: `${base}${MCP_PATH}`,
    bearer_methods_supported: ["header"],
    resource_name: "Airlock MCP endpoint",
    resource_documentation: `${base}/`,
  });
}

export function noAuthorizationServer(): Response {
  return Response.json(
    {
      error: "not_found",
      error_description:
        "Airlock has no OAuth authorization server: an agent authenticates with a bearer token an Airlock admin issues (npx airlock agent add); send it as Authorization: Bearer alk_…. If /api/mcp answered 401 to a token you sent, it was refused (unknown, revoked or expired): ask an Airlock admin for a new one.",
    },
    { status: 404, headers: { "cache-control": "no-store" } },
  );
}
