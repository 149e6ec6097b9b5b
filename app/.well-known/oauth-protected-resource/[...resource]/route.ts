/** The same metadata where RFC 9728 puts it for a resource with a path (`…/api/mcp`); any other path has none. */
import { MCP_PATH, noAuthorizationServer, protectedResourceMetadata } from "@/lib/mcp/oauth-discovery";

export const dynamic = "force-dynamic";

export async function GET(request: Request, { params }: { params: Promise<{ resource: string[] }> }): Promise<Response> {
  const { resource } = await params;
  return `/${resource.join("/")}` === MCP_PATH ? protectedResourceMetadata(request) : noAuthorizationServer();
}
