/**
 * Next's proxy, in front of every console page, route and server action (not static files, and not
 * /api/mcp, which applies the same Host and Origin rules itself, answering in JSON-RPC):
 *
 * - refuses, with 400, a path whose percent-escapes do not decode (`/runs/%E0%A4%A`), which Next
 *   would answer with a bare 500;
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
import { hostViolation } from "@/lib/auth/hosts";
import { REQUESTED_PATH_HEADER } from "@/lib/auth/sign-in-redirect";
import { HOSTILE_CONTENT_CSP, isArtifactPath } from "@/lib/runs/artifacts-media";
import { AppError, toPublicError } from "@/lib/errors";

export function proxy(request: NextRequest): NextResponse {
  const escape = malformedEscape(request.nextUrl.pathname);
  if (escape) {
    const error = toPublicError(new AppError("bad_request", `The path holds ${escape}, which is not a valid percent-encoded UTF-8 sequence.`));
    return NextResponse.json({ error }, { status: error.status, headers: { "cache-control": "no-store" } });
  }
  const violation = hostViolation(request);
  if (violation) {
    const error = toPublicError(new AppError("forbidden", `Forbidden: ${violation}`));
    return NextResponse.json({ error }, { status: error.status, headers: { "cache-control": "no-store" } });
  }
  const policy = isArtifactPath(request.nextUrl.pathname) ? HOSTILE_CONTENT_CSP : contentSecurityPolicy(randomBytes(16).toString("base64"));
  const headers = new Headers(request.headers);
  headers.set("content-security-policy", policy);
  headers.set(REQUESTED_PATH_HEADER, `${request.nextUrl.pathname}${request.nextUrl.search}`);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("content-security-policy", policy);
  return response;
}

/** The first percent-escape sequence of a path that does not decode (Next's own decoding would answer it with a bare 500), or null. */
function malformedEscape(pathname: string): string | null {
  for (const segment of pathname.split("/")) {
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
