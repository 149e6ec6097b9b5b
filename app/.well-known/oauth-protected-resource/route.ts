/** OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint: bearer tokens in the header. */
import { publicBaseUrl } from "@/lib/mcp/http";

export const dynamic = "force-dynamic";

export function GET(request: Request): Response {
  const base = publicBaseUrl(request);
  return Response.json({
    resource: `${base}/api/mcp`,
    bearer_methods_supported: ["header"],
    resource_name: "Airlock MCP endpoint",
    resource_documentation: `${base}/`,
  });
}
