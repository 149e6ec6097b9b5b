/**
 * The console's proxy (proxy.ts) and the agent door (lib/mcp/http.ts) refuse a Host that is not
 * this deployment's — including one with userinfo, which a URL parser reads as the name after the
 * `@` — and the proxy gives every console response a Content-Security-Policy around a fresh nonce,
 * handed to Next on the request so its scripts carry it. The browser's view is e2e/security-headers.spec.ts.
 */
import { NextRequest } from "next/server";
import { beforeAll, describe, expect, it } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { rebindingViolation } from "@/lib/mcp/http";
import { proxy } from "@/proxy";

const request = (host: string | null, path = "/queue") => {
  const headers = new Headers();
  if (host !== null) headers.set("host", host);
  return new NextRequest(`http://localhost${path}`, { headers });
};

const FOREIGN = [
  "evil@localhost",
  "evil@localhost:3000",
  "user:pass@127.0.0.1",
  "evil.example",
  "localhost.evil.example",
  "localhost/queue",
  "localhost evil",
  "localhost:3000:1",
  "",
];

beforeAll(() => {
  setEnvForChildren({ NODE_ENV: "production", AIRLOCK_HOST: "10.0.0.5", AIRLOCK_ALLOWED_HOSTS: "airlock.internal" });
});

describe("the Host allowlist", () => {
  it("the console refuses a foreign Host, or one with userinfo, with 403 before any page runs", async () => {
    for (const host of [...FOREIGN, null]) {
      const response = proxy(request(host));
      expect(response.status, String(host)).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("forbidden");
      expect(response.headers.get("x-middleware-next")).toBeNull();
    }
  });

  it("the console lets this deployment's names through", () => {
    for (const host of ["localhost", "localhost:3000", "127.0.0.1:3000", "[::1]:3000", "10.0.0.5:3000", "AIRLOCK.internal"]) {
      const response = proxy(request(host));
      expect(response.status, host).toBe(200);
      expect(response.headers.get("x-middleware-next"), host).toBe("1");
    }
  });

  it("the MCP endpoint refuses a Host with userinfo too", () => {
    for (const host of FOREIGN) expect(rebindingViolation(request(host, "/api/mcp")), host).toMatch(/^Host .* is not allowed$/);
    expect(rebindingViolation(request("localhost:3000", "/api/mcp"))).toBeNull();
  });
});

describe("the Content-Security-Policy", () => {
  it("is strict, with a fresh nonce per request that Next receives on the request", () => {
    const policies = [proxy(request("localhost:3000")), proxy(request("localhost:3000"))].map((response) => {
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(response.headers.get("x-middleware-request-content-security-policy")).toBe(policy);
      return policy;
    });
    const nonces = policies.map((policy) => /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1]);
    expect(nonces[0]).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(nonces[0]).not.toBe(nonces[1]);
    const directives = Object.fromEntries(policies[0]!.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]));
    expect(directives).toMatchObject({
      "default-src": "'self'",
      "script-src": `'self' 'nonce-${nonces[0]}' 'strict-dynamic'`,
      "object-src": "'none'",
      "base-uri": "'none'",
      "frame-ancestors": "'none'",
      "form-action": "'self'",
    });
    expect(policies[0]).not.toContain("unsafe-eval");
    expect(policies[0]).not.toContain("upgrade-insecure-requests");
  });

  it("upgrades to https only for an https deployment, and lets forms go to the OIDC issuer only when SSO is on", () => {
    setEnvForChildren({
      AIRLOCK_PUBLIC_URL: "https://airlock.example.com",
      AIRLOCK_ALLOWED_HOSTS: "",
      AIRLOCK_OIDC_ISSUER: "https://id.example.com/realms/x",
      AIRLOCK_OIDC_CLIENT_ID: "airlock",
      AIRLOCK_OIDC_CLIENT_SECRET: "secret",
    });
    const policy = proxy(request("airlock.example.com")).headers.get("content-security-policy") ?? "";
    expect(policy).toContain("form-action 'self' https://id.example.com;");
    expect(policy).toMatch(/upgrade-insecure-requests$/);
  });
});

describe("what the proxy refuses before Next answers it with a bare 500", () => {
  const refused = async (response: Response) => ({
    status: response.status,
    error: ((await response.json()) as { error: { code: string; message: string } }).error,
  });

  it("a query string whose escapes are not UTF-8 (which every reader would turn into U+FFFD), in a key or a value", async () => {
    for (const query of ["agent=%FF", "q=ok&%C0%AF=1", "q=%E0%A4%A", "q=%"]) {
      expect(await refused(proxy(request("localhost:3000", `/queue?${query}`))), query).toEqual({
        status: 400,
        error: expect.objectContaining({ code: "bad_request", message: expect.stringContaining("The query holds") }),
      });
    }
    for (const query of ["agent=caf%C3%A9", "q=a+b&status=failed", ""]) expect(proxy(request("localhost:3000", `/queue?${query}`)).status, query).toBe(200);
  });

  it("a server action sent from another site (403), or declaring a body past Next's 1 MB for actions (413); the same form from here passes", async () => {
    const action = (headers: Record<string, string>) =>
      proxy(new NextRequest("http://localhost/agents", { method: "POST", headers: { host: "localhost:3000", "next-action": "abc", ...headers } }));
    expect(await refused(action({ origin: "http://evil.example" }))).toEqual({
      status: 403,
      error: expect.objectContaining({ code: "forbidden", message: 'Forbidden: a request sent from "http://evil.example", another site' }),
    });
    expect((await refused(action({ origin: "http://127.0.0.1:9999" }))).status).toBe(403);
    expect((await refused(action({ origin: "null" }))).status).toBe(403);
    expect(await refused(action({ origin: "http://localhost:3000", "content-length": String(2 * 1024 * 1024) }))).toEqual({
      status: 413,
      error: expect.objectContaining({ code: "payload_too_large" }),
    });
    expect(action({ origin: "http://localhost:3000", "content-length": "300" }).status).toBe(200);
    expect(action({}).status).toBe(200);
  });
});
