import { readFileSync } from "node:fs";
import { test as base } from "@playwright/test";
import type { DemoCredentials } from "../lib/demo/seed";
import { STATE_FILE } from "./global-setup";
import { LoginPage } from "./pages/login-page";

/** The e2e server's database (superuser URL), its data directory (checkpoints, ledger state) and the seeded logins. */
type State = { databaseUrl: string; dataDir: string; credentials: DemoCredentials };

export const test = base.extend<{ state: State; loginPage: LoginPage; loginAs: (role: "admin" | "reviewer" | "compliance") => Promise<void> }>({
  state: async ({}, use) => {
    await use(JSON.parse(readFileSync(STATE_FILE, "utf8")) as State);
  },
  loginPage: async ({ page }, use) => {
    await use(new LoginPage(page));
  },
  loginAs: async ({ state, loginPage }, use) => {
    await use(async (role) => {
      const user = state.credentials.users.find((u) => u.role === role);
      if (!user) throw new Error(`no seeded ${role}`);
      await loginPage.goto();
      await loginPage.signIn(user.email, user.password);
      await loginPage.page.waitForURL((url) => url.pathname === "/");
    });
  },
});

export { expect } from "@playwright/test";
