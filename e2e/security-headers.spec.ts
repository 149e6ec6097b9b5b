/**
 * The console's security headers against `next start` (proxy.ts, next.config.js): every page has a
 * Content-Security-Policy with a fresh nonce that Next puts on its scripts — so the pages still
 * hydrate, with no violation reported — plus Permissions-Policy and Cross-Origin-Opener-Policy;
 * and a request whose Host is not this deployment's, or carries userinfo, is refused with 403.
 */
import { request as httpRequest } from "node:http";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";

const nonceOf = (policy: string | null) => /'nonce-([^']+)'/.exec(policy ?? "")?.[1];

/** Records every CSP violation the page reports, from before its first script runs. */
async function watchViolations(page: Page): Promise<() => Promise<string[]>> {
  const messages: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) messages.push(message.text());
  });
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __violations: string[] }).__violations = seen;
    document.addEventListener("securitypolicyviolation", (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  return async () => [...messages, ...(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations))];
}

/** Next's client runtime sets `window.next` when its first script runs: the scripts were allowed. */
const nextRan = (page: Page) => page.waitForFunction(() => (window as unknown as { next?: { appDir?: boolean } }).next?.appDir === true);

/** Sends one raw HTTP request with exactly this Host header (clients may normalize their own). */
function withHost(baseURL: string, host: string, path = "/login"): Promise<number> {
  const url = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

test("pages carry a nonce-based CSP, Permissions-Policy and COOP, and the nonce is on Next's scripts", async ({ page, request, loginAs }) => {
  const login = await request.get("/login");
  const policy = login.headers()["content-security-policy"] ?? null;
  const nonce = nonceOf(policy);
  expect(nonce).toBeTruthy();
  expect(policy).toContain("'strict-dynamic'");
  expect(policy).toContain("object-src 'none'");
  expect(policy).toContain("frame-ancestors 'none'");
  expect(policy).not.toContain("unsafe-eval");
  expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/);
  expect(login.headers()["permissions-policy"]).toContain("camera=()");
  expect(login.headers()["cross-origin-opener-policy"]).toBe("same-origin");
  expect(login.headers()["x-frame-options"]).toBe("DENY");

  const html = await login.text();
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((match) => match[0]);
  expect(scripts.length).toBeGreaterThan(0);
  for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
  // A fresh nonce per response.
  expect(nonceOf((await request.get("/login")).headers()["content-security-policy"] ?? null)).not.toBe(nonce);

  await loginAs("reviewer");
  for (const path of ["/", "/queue", "/runs", "/no-such-page"]) {
    const response = await page.goto(path);
    const headers = response!.headers();
    expect(nonceOf(headers["content-security-policy"] ?? null), path).toBeTruthy();
    expect(headers["permissions-policy"], path).toBeTruthy();
    expect(headers["cross-origin-opener-policy"], path).toBe("same-origin");
  }
});

test("the console hydrates under the policy: no violation on the login page, the dashboard, the queue or a 404", async ({ page, loginPage, state }) => {
  const violations = await watchViolations(page);
  const reviewer = state.credentials.users.find((user) => user.role === "reviewer")!;
  await loginPage.goto();
  await nextRan(page);
  await loginPage.signIn(reviewer.email, reviewer.password);
  await page.waitForURL((url) => url.pathname === "/");
  await nextRan(page);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Queue", exact: true }).click();
  await expect(page).toHaveURL(/\/queue$/);
  await nextRan(page);
  await page.goto("/no-such-page");
  await expect(page.getByRole("heading", { name: "Page not found" })).toBeVisible();
  await nextRan(page);
  expect(await violations()).toEqual([]);
});

test("a request with a foreign Host, or a Host with userinfo, is refused with 403", async ({ baseURL }) => {
  const port = new URL(baseURL!).port;
  expect(await withHost(baseURL!, `127.0.0.1:${port}`)).toBe(200);
  for (const host of [`evil@localhost:${port}`, `evil@127.0.0.1:${port}`, "evil.example", `localhost.evil.example:${port}`]) {
    expect(await withHost(baseURL!, host), host).toBe(403);
    expect(await withHost(baseURL!, host, "/api/auth/csrf"), host).toBe(403);
    expect(await withHost(baseURL!, host, "/api/mcp"), host).toBe(403);
  }
});
