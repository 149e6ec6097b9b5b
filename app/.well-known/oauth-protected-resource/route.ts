/** OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint: bearer tokens in the header. */
import { protectedResourceMetadata } from "@/lib/mcp/oauth-discovery";

export const dynamic = "force-dynamic";

export function GET(request: Request): Response {
  return protectedResourceMetadata(request);
}
