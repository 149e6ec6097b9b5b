/**
 * The names this deployment answers to, against DNS rebinding: a page or script on another site
 * that points a name of its own at this server must not be able to talk to it. Used by every
 * console request (proxy.ts) and by the agent door (lib/mcp/http.ts).
 *
 * Guarantees: a Host header is accepted only when it is exactly `name[:port]` (a DNS name, an IPv4
 * address or a bracketed IPv6 address) and the name is a loopback name, the address the server
 * listens on (AIRLOCK_HOST, unless it is a wildcard), AIRLOCK_PUBLIC_URL's host or one of
 * AIRLOCK_ALLOWED_HOSTS; an Origin, when sent, must name one of the same.
 * Refuses: a missing Host, one with userinfo (`evil@localhost`, which a URL parser would read as
 * `localhost`), a path, spaces or any other character outside that grammar, and foreign names.
 */
import { env } from "@/lib/env";

const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]", "::1"];
const WILDCARD_HOSTS = ["0.0.0.0", "::", "[::]"];
const HOST_GRAMMAR = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/;

function allowedHostnames(): Set<string> {
  const config = env();
  const hosts = new Set(LOOPBACK_HOSTS);
  if (!WILDCARD_HOSTS.includes(config.AIRLOCK_HOST)) hosts.add(config.AIRLOCK_HOST.toLowerCase());
  if (config.AIRLOCK_PUBLIC_URL) hosts.add(new URL(config.AIRLOCK_PUBLIC_URL).hostname.toLowerCase());
  for (const host of config.AIRLOCK_ALLOWED_HOSTS?.split(",") ?? []) {
    if (host.trim()) hosts.add(host.trim().toLowerCase());
  }
  return hosts;
}

function hostnameOf(hostHeader: string): string | null {
  if (!HOST_GRAMMAR.test(hostHeader)) return null;
  try {
    return new URL(`http://${hostHeader}`).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** null when the Host header names this deployment; otherwise why not. */
export function hostViolation(request: Request): string | null {
  const host = request.headers.get("host");
  const hostname = host ? hostnameOf(host) : null;
  return hostname && allowedHostnames().has(hostname) ? null : `Host ${JSON.stringify(host)} is not allowed`;
}

/** null when no Origin was sent or it names this deployment; otherwise why not. */
export function originViolation(request: Request): string | null {
  const origin = request.headers.get("origin");
  if (origin === null) return null;
  let originHost: string | null = null;
  try {
    originHost = new URL(origin).hostname.toLowerCase();
  } catch {
    /* unparseable origin: refused below */
  }
  return originHost && allowedHostnames().has(originHost) ? null : `Origin ${JSON.stringify(origin)} is not allowed`;
}

/**
 * Why a browser's post (a server action, the JSON decision route) is refused as sent from another
 * site, or null: its Origin, when sent, must name the host it was sent to, as Next checks a server
 * action's (the first X-Forwarded-Host, or the Host). Checked in proxy.ts before Next, whose own
 * refusal is a bare 500.
 */
export function foreignOrigin(request: Request): string | null {
  const origin = request.headers.get("origin");
  if (origin === null) return null;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return `the Origin ${JSON.stringify(origin.slice(0, 100))} is not a URL`;
  }
  const forwarded = request.headers.get("x-forwarded-host")?.split(",")[0]?.trim();
  return host === forwarded || host === request.headers.get("host") ? null : `a request sent from ${JSON.stringify(origin.slice(0, 100))}, another site`;
}
