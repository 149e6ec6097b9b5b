/**
 * The address a console request came from, for the sign-in throttle (lib/auth/login-throttle.ts).
 *
 * `next start` hands the app no socket address: it sets X-Forwarded-For to the peer only when the
 * client did not send one, so a client could name any address it likes. So the web process stamps
 * every request it receives with its TCP peer (`installPeerStamp`, called once by instrumentation.ts
 * through Node's `http.server.request.start` channel, before Next sees the request): the header
 * holds a per-process secret and the peer, and overwrites whatever the client sent under that name.
 *
 * Guarantees: X-Forwarded-For is believed only hop by hop from the right, and only while the hop
 * that added the entry is listed in AIRLOCK_TRUSTED_PROXIES; the address is then the rightmost
 * entry not added by a trusted proxy. Addresses are normalized (IPv4-mapped IPv6 → IPv4).
 * Refuses: a stamp without this process's secret (a client's forgery, or a request that arrived
 * before the stamp was installed) — the address is then null, which the throttle counts as one
 * shared "unknown" address.
 */
import { randomBytes } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";
import { env } from "@/lib/env";

const PEER_HEADER = "x-airlock-peer";

// Route handlers and instrumentation are bundled separately; the process is what they share.
const SECRET_KEY = Symbol.for("airlock.peerStampSecret");
type Stamped = typeof globalThis & { [SECRET_KEY]?: string };

function stampSecret(): string {
  const global = globalThis as Stamped;
  global[SECRET_KEY] ??= randomBytes(16).toString("hex");
  return global[SECRET_KEY];
}

/** "::ffff:10.0.0.1" → "10.0.0.1"; null for anything that is not an IP address. */
function normalizeAddress(value: string | undefined | null): string | null {
  const trimmed = value?.trim() ?? "";
  const unmapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed)?.[1] ?? trimmed;
  const family = isIP(unmapped);
  if (family === 4) return unmapped;
  if (family === 6) return unmapped.toLowerCase();
  return null;
}

const INSTALLED_KEY = Symbol.for("airlock.peerStampInstalled");

/** Stamps every HTTP request this process serves with its TCP peer (idempotent). */
export function installPeerStamp(): void {
  const global = globalThis as typeof globalThis & { [INSTALLED_KEY]?: boolean };
  if (global[INSTALLED_KEY]) return;
  global[INSTALLED_KEY] = true;
  const secret = stampSecret();
  subscribe("http.server.request.start", (message) => {
    const { request, socket } = message as { request: IncomingMessage; socket: { remoteAddress?: string } };
    request.headers[PEER_HEADER] = `${secret} ${normalizeAddress(socket.remoteAddress) ?? "unknown"}`;
  });
}

function trustedProxies(): BlockList {
  const list = new BlockList();
  for (const entry of env().AIRLOCK_TRUSTED_PROXIES) {
    const [address = "", bits] = entry.split("/");
    const normalized = normalizeAddress(address);
    if (!normalized) continue;
    const family = isIP(normalized) === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(normalized, family);
    else list.addSubnet(normalized, Number(bits), family);
  }
  return list;
}

function isTrusted(list: BlockList, address: string): boolean {
  return list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
}

/** The client's address for a request's headers, or null when it cannot be known. */
export function clientAddress(headers: Headers): string | null {
  const [secret, stamped] = (headers.get(PEER_HEADER) ?? "").split(" ");
  if (secret !== stampSecret()) return null;
  let address = normalizeAddress(stamped);
  if (!address) return null;
  const trusted = trustedProxies();
  const forwarded = (headers.get("x-forwarded-for") ?? "").split(",").reverse();
  for (const hop of forwarded) {
    if (!isTrusted(trusted, address)) break;
    const next = normalizeAddress(hop);
    // A hop a trusted proxy did not write sensibly ends the chain at the proxy itself.
    if (!next) break;
    address = next;
  }
  return address;
}
