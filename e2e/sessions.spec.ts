/**
 * Sign-out ends the session on the server (lib/auth/session.ts): a session cookie copied before
 * sign-out, replayed afterwards in a fresh browser, is anonymous — the console sends it to /login
 * and the JSON routes answer 401 — and the person's other browsers are signed out too.
 */
import type { Browser, BrowserContext, Cookie } from "@playwright/test";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";

async function browserWith(browser: Browser, baseURL: string | undefined, cookies: Cookie[]): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL });
  await context.addCookies(cookies);
  return context;
}

test("a session cookie copied before sign-out no longer works after it, in a fresh browser", async ({ browser, baseURL, page, loginAs }) => {
  await loginAs("reviewer");
  const copied = await page.context().cookies();
  expect(copied.some((cookie) => cookie.name.includes("session-token"))).toBe(true);

  // Before sign-out the copy is as good as the original.
  const before = await browserWith(browser, baseURL, copied);
  const replay = await before.newPage();
  await replay.goto("/queue");
  await expect(replay).toHaveURL(/\/queue$/);
  expect((await replay.request.get("/api/queue/count")).status()).toBe(200);
  await before.close();

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL((url) => url.pathname === "/login");

  const after = await browserWith(browser, baseURL, copied);
  const stolen = await after.newPage();
  await stolen.goto("/queue");
  await expect(stolen).toHaveURL(/\/login/);
  const api = await stolen.request.get("/api/queue/count");
  expect(api.status()).toBe(401);
  expect(await api.json()).toMatchObject({ error: { code: "unauthorized" } });
  await after.close();
});

test("signing out in one browser signs the person out in every other", async ({ browser, baseURL, page, loginAs, state }) => {
  await loginAs("compliance");
  const person = state.credentials.users.find((user) => user.role === "compliance")!;
  const laptop = await browser.newContext({ baseURL });
  const laptopLogin = new LoginPage(await laptop.newPage());
  await laptopLogin.goto();
  await laptopLogin.signIn(person.email, person.password);
  await laptopLogin.page.waitForURL((url) => url.pathname === "/");

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL((url) => url.pathname === "/login");

  await laptopLogin.page.goto("/audit");
  await expect(laptopLogin.page).toHaveURL(/\/login\?from=%2Faudit$/);
  // Signing in again starts a session that works, on the page that was asked for.
  await laptopLogin.signIn(person.email, person.password);
  await laptopLogin.page.waitForURL((url) => url.pathname === "/audit");
  await laptop.close();
});
