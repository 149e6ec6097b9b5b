/**
 * Next's proxy, in front of every console page, route and server action (not static files, and not
 * /api/mcp, which applies the same Host and Origin rules itself, answering in JSON-RPC):
 *
 * - refuses, with 400, a path whose percent-escapes do not decode (`/runs/%E0%A4%A`), which Next
 *   would answer with a bare 500, and a query string whose escapes are not UTF-8 (`?agent=%FF`),
 *   which every reader would silently turn into U+FFFD;
 * - refuses a server action request Next would answer with a bare 500: one whose Origin is not
 *   the host it was sent to (403; Next's own check, said in JSON) or whose declared body passes
 *   Next's 1 MB limit for actions (413);
 * - refuses, with 403, a request whose Host is not this deployment's (lib/auth/hosts.ts: DNS
 *   rebinding; a Host with userinfo such as `evil@localhost` included);
 * - sets a Content-Security-Policy with a fresh nonce on the request (Next puts the nonce on its
 *   scripts) and on the response (lib/auth/content-security-policy.ts) — except on the routes that
 *   serve a run's artifacts, bytes a hostile script wrote, which get `sandbox; default-src 'none'`
 *   (lib/runs/artifacts-media.ts; a route cannot replace a header the proxy set). The other
 *   security headers are static, in next.config.js;
 * - passes the requested path to the server (lib/auth/sign-in-redirect.ts), so sign-in returns
 *   the person to the page they asked for.
 */
import { randomBytes } from "node:crypto";
import { NextResponse, type NextRequest } from "next/server";
import { contentSecurityPolicy } from "@/lib/auth/content-security-policy";
import { foreignOrigin, hostViolation } from "@/lib/auth/hosts";
import { REQUESTED_PATH_HEADER } from "@/lib/auth/sign-in-redirect";
import { HOSTILE_CONTENT_CSP, isArtifactPath } from "@/lib/runs/artifacts-media";
import { AppError, toPublicError } from "@/lib/errors";

/** Next's limit for a server action's body (serverActions.bodySizeLimit, not set in next.config.js). */
const ACTION_BODY_LIMIT = 1024 * 1024;

function refusal(error: AppError): NextResponse {
  const body = toPublicError(error);
  return NextResponse.json({ error: body }, { status: body.status, headers: { "cache-control": "no-store" } });
}

export function proxy(request: NextRequest): NextResponse {
  const escape = malformedEscape(request.nextUrl.pathname.split("/"));
  if (escape) return refusal(new AppError("bad_request", `The path holds ${escape}, which is not a valid percent-encoded UTF-8 sequence.`));
  const query = malformedEscape(
    request.nextUrl.search
      .slice(1)
      .split(/[&=]/)
      .map((part) => part.replaceAll("+", " ")),
  );
  if (query) return refusal(new AppError("bad_request", `The query holds ${query}, which is not a valid percent-encoded UTF-8 sequence.`));
  const violation = hostViolation(request);
  if (violation) return refusal(new AppError("forbidden", `Forbidden: ${violation}`));
  if (request.method === "POST" && request.headers.has("next-action")) {
    const foreign = foreignOrigin(request);
    if (foreign) return refusal(new AppError("forbidden", `Forbidden: ${foreign}`));
    if (Number(request.headers.get("content-length") ?? 0) > ACTION_BODY_LIMIT) {
      return refusal(new AppError("payload_too_large", `A form may send at most ${ACTION_BODY_LIMIT} bytes.`));
    }
  }
  const policy = isArtifactPath(request.nextUrl.pathname) ? HOSTILE_CONTENT_CSP : contentSecurityPolicy(randomBytes(16).toString("base64"));
  const headers = new Headers(request.headers);
  headers.set("content-security-policy", policy);
  headers.set(REQUESTED_PATH_HEADER, `${request.nextUrl.pathname}${request.nextUrl.search}`);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("content-security-policy", policy);
  return response;
}

/** The first of `parts` (path segments, query keys and values) whose percent-escapes do not decode to UTF-8, quoted; or null. */
function malformedEscape(parts: readonly string[]): string | null {
  for (const segment of parts) {
    try {
      decodeURIComponent(segment);
    } catch {
      return JSON.stringify(segment.slice(0, 60));
    }
  }
  return null;
}

export const config = {
  matcher: ["/((?!_next/static|_next/image|favicon.ico|api/mcp).*)"],
};
