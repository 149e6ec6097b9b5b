/**
 * Well-known metadata under the endpoint's own path (`/api/mcp/.well-known/openid-configuration`,
 * one of the places MCP 2025-11-25 clients look for an authorization server): there is none, so
 * JSON saying how an agent gets a token (lib/mcp/oauth-discovery.ts), not the console's HTML 404.
 */
import { noAuthorizationServer } from "@/lib/mcp/oauth-discovery";

export const dynamic = "force-dynamic";

export function GET(): Response {
  return noAuthorizationServer();
}
