/**
 * The sign-in throttle through the real path: next-auth's own route handlers (CSRF token, the
 * credentials callback, the authorize function, signInWithPassword) behind a real HTTP server that
 * stamps each request with its TCP peer (installPeerStamp, as instrumentation.ts does), on real
 * PostgreSQL. The stranger and the owner connect from different loopback addresses (127.0.0.2,
 * 127.0.0.3), so the addresses the throttle sees are real socket peers, not headers a test wrote.
 * The curve itself is checked with an injected clock.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { clientAddress, installPeerStamp } from "./client-address";
import { throttleDelayMs } from "./login-throttle";
import { createUser, signInWithPassword } from "./users";

const system: Actor = { type: "system", name: "test" };
const STRANGER = "127.0.0.2";
const OWNER = "127.0.0.3";
const PROXY = "127.0.0.4";
let db: TestDatabase;
let server: Server;
let port: number;

type Reply = { status: number; location: string; cookies: string[]; body: string };

/** One HTTP request to the test server from `from` (a local address), with the given headers and form body. */
function send(from: string, method: "GET" | "POST", path: string, headers: Record<string, string> = {}, form?: Record<string, string>): Promise<Reply> {
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        localAddress: from,
        method,
        path,
        headers: { ...headers, ...(body ? { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) } : {}) },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, location: String(res.headers.location ?? ""), cookies: res.headers["set-cookie"] ?? [], body: text }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const cookiePairs = (cookies: string[]) => cookies.map((cookie) => cookie.split(";")[0]).join("; ");

/** Signs in through next-auth's credentials callback, as the login form's server action does. */
async function signIn(from: string, email: string, password: string, headers: Record<string, string> = {}) {
  const csrf = await send(from, "GET", "/api/auth/csrf", headers);
  const { csrfToken } = JSON.parse(csrf.body) as { csrfToken: string };
  const reply = await send(
    from,
    "POST",
    "/api/auth/callback/credentials",
    { ...headers, cookie: cookiePairs(csrf.cookies) },
    { email, password, csrfToken, callbackUrl: "/" },
  );
  expect(reply.status).toBe(302);
  const signedIn = reply.cookies.some((cookie) => cookie.startsWith("authjs.session-token="));
  const code = new URL(reply.location, "http://x").searchParams.get("code");
  return { signedIn, code };
}

const lastEvent = () => db.prisma.auditEvent.findFirstOrThrow({ where: { action: { startsWith: "auth.login_" } }, orderBy: { id: "desc" } });

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AUTH_SECRET: "a-test-secret-of-at-least-32-characters!", AIRLOCK_TRUSTED_PROXIES: PROXY });
  for (const email of ["reviewer@example.com", "sprayed-1@example.com", "proxied@example.com"]) {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email, role: "reviewer", password: "the reviewer's password" }));
  }
  installPeerStamp();
  const { handlers } = await import("./next-auth");
  server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      const request = new NextRequest(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers,
        body: req.method === "POST" ? Buffer.concat(chunks) : undefined,
      });
      const response = await (req.method === "POST" ? handlers.POST : handlers.GET)(request);
      res.statusCode = response.status;
      response.headers.forEach((value, name) => name !== "set-cookie" && res.setHeader(name, value));
      res.setHeader("set-cookie", response.headers.getSetCookie());
      res.end(Buffer.from(await response.arrayBuffer()));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

describe("the sign-in throttle, through next-auth", () => {
  it("a stranger's failures delay the stranger; the owner's right password from another address still signs in", async () => {
    for (let i = 0; i < 3; i++) expect(await signIn(STRANGER, "reviewer@example.com", `guess-${i}`)).toEqual({ signedIn: false, code: "credentials" });
    // The stranger is now made to wait — even the right password is not checked from there.
    expect(await signIn(STRANGER, "reviewer@example.com", "the reviewer's password")).toEqual({ signedIn: false, code: "rate_limited" });
    expect((await lastEvent()).data).toMatchObject({ email: "reviewer@example.com", address: STRANGER, reason: "rate_limited", throttledBy: "account" });
    // The reviewer, from their own address, is not locked out.
    expect(await signIn(OWNER, "reviewer@example.com", "the reviewer's password")).toEqual({ signedIn: true, code: null });
    expect((await lastEvent()).data).toEqual({ email: "reviewer@example.com", address: OWNER });
    // …and the owner's success does not clear the stranger's delay.
    expect(await signIn(STRANGER, "reviewer@example.com", "the reviewer's password")).toEqual({ signedIn: false, code: "rate_limited" });
  });

  it("a forged X-Forwarded-For or peer stamp does not give the stranger a fresh address", async () => {
    const forged = { "x-forwarded-for": "203.0.113.77", "x-airlock-peer": "0123456789abcdef 203.0.113.78" };
    expect(await signIn(STRANGER, "reviewer@example.com", "the reviewer's password", forged)).toEqual({ signedIn: false, code: "rate_limited" });
    expect((await lastEvent()).data).toMatchObject({ address: STRANGER, reason: "rate_limited" });
  });

  it("X-Forwarded-For is believed only from a proxy in AIRLOCK_TRUSTED_PROXIES", async () => {
    expect(await signIn(PROXY, "proxied@example.com", "the reviewer's password", { "x-forwarded-for": "203.0.113.5, 198.51.100.20" })).toEqual({
      signedIn: true,
      code: null,
    });
    // The rightmost entry the trusted proxy wrote is the client; what the client wrote before it is not believed.
    expect((await lastEvent()).data).toEqual({ email: "proxied@example.com", address: "198.51.100.20" });
  });

  it("a peer stamp without this process's secret is not believed: the address is unknown", () => {
    expect(clientAddress(new Headers({ "x-airlock-peer": "0123456789abcdef 203.0.113.9", "x-forwarded-for": "203.0.113.9" }))).toBeNull();
    expect(clientAddress(new Headers({ "x-forwarded-for": "203.0.113.9" }))).toBeNull();
  });

  it("malformed credentials (NUL, a lone surrogate) are a wrong password, not a server error", async () => {
    for (const bad of ["rev\u0000iewer@example.com", "reviewer\ud800@example.com"]) {
      expect(await signIn(OWNER, bad, "x\u0000y")).toEqual({ signedIn: false, code: "credentials" });
    }
  });
});

describe("the delay curve", () => {
  it("starts after AIRLOCK_LOGIN_MAX_FAILURES failures at 1 s, doubles, and stops at AIRLOCK_LOGIN_WINDOW_MINUTES", () => {
    const max = 15 * 60_000;
    expect([0, 1, 2, 3, 4, 5, 6, 12, 13, 40].map((n) => throttleDelayMs(n, 3, max))).toEqual([0, 0, 0, 1000, 2000, 4000, 8000, 512_000, max, max]);
  });

  it("each further failure from the address waits twice as long; waiting it out allows one more guess; a success clears it", async () => {
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "clocked@example.com", role: "reviewer", password: "the clocked password" }));
    const from = { address: "192.0.2.50" };
    let now = new Date("2026-12-01T12:00:00Z");
    const attempt = (password: string) => signInWithPassword(db.prisma, "clocked@example.com", password, { ...from, now });
    for (let i = 0; i < 3; i++) expect(await attempt("wrong")).toMatchObject({ reason: "invalid_credentials" });
    for (const seconds of [1, 2, 4, 8]) {
      expect(await attempt("wrong")).toEqual({ ok: false, reason: "rate_limited", retryAfterSeconds: seconds });
      now = new Date(now.getTime() + seconds * 1000);
      expect(await attempt("wrong")).toMatchObject({ reason: "invalid_credentials" });
    }
    now = new Date(now.getTime() + 16_000);
    expect(await attempt("the clocked password")).toMatchObject({ ok: true });
    expect(await attempt("wrong")).toMatchObject({ reason: "invalid_credentials" });
  });

  it("an address guessing at many accounts is slowed across all of them after three times as many failures", async () => {
    const from = { address: "192.0.2.60", now: new Date("2026-12-01T13:00:00Z") };
    // Three failures at each of three accounts: no account is past its own three free failures…
    for (const email of ["nobody-1@example.com", "nobody-2@example.com", "nobody-3@example.com"]) {
      for (let i = 0; i < 3; i++) expect(await signInWithPassword(db.prisma, email, "wrong", from)).toMatchObject({ reason: "invalid_credentials" });
    }
    // …but the address is: a fourth account, never guessed at, is delayed for it.
    expect(await signInWithPassword(db.prisma, "sprayed-1@example.com", "the reviewer's password", from)).toEqual({
      ok: false,
      reason: "rate_limited",
      retryAfterSeconds: 1,
    });
    expect((await lastEvent()).data).toMatchObject({ address: "192.0.2.60", throttledBy: "address" });
    expect(await signInWithPassword(db.prisma, "sprayed-1@example.com", "the reviewer's password", { address: "192.0.2.61", now: from.now })).toMatchObject({
      ok: true,
    });
  });
});
