/** No OAuth authorization server (lib/mcp/oauth-discovery.ts): JSON saying how an agent gets a token, not the console's HTML 404. */
import { noAuthorizationServer } from "@/lib/mcp/oauth-discovery";

export const dynamic = "force-dynamic";

export function GET(): Response {
  return noAuthorizationServer();
}

export function POST(): Response {
  return noAuthorizationServer();
}
