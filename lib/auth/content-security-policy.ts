/**
 * The console's Content-Security-Policy, built per request around a fresh nonce (proxy.ts). Next
 * reads the nonce from the request's policy and puts it on its own scripts and inline styles; with
 * 'strict-dynamic', only scripts carrying the nonce, and those they load, run.
 *
 * Guarantees: no inline script or eval runs in production ('unsafe-eval' only under `next dev`,
 * where React needs it for its error stacks); no plugin content, no <base> rewriting, no framing;
 * connections, images, fonts and forms stay on this origin — forms may also go to the OIDC issuer
 * when single sign-on is configured; style attributes are allowed (they cannot run code; charts use
 * them). Requests are upgraded to https only when AIRLOCK_PUBLIC_URL is https (a plain-http
 * deployment on a LAN keeps working).
 */
import { env } from "@/lib/env";

export function contentSecurityPolicy(nonce: string): string {
  const config = env();
  const formTargets = ["'self'", ...(config.AIRLOCK_OIDC_ISSUER ? [new URL(config.AIRLOCK_OIDC_ISSUER).origin] : [])];
  const directives = [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${config.NODE_ENV === "development" ? " 'unsafe-eval'" : ""}`,
    `style-src 'self' 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    `form-action ${formTargets.join(" ")}`,
    "frame-ancestors 'none'",
  ];
  if (config.AIRLOCK_PUBLIC_URL?.startsWith("https:")) directives.push("upgrade-insecure-requests");
  return directives.join("; ");
}
