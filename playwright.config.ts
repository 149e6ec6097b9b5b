/**
 * End-to-end tests in Debian's Chromium against `next start` on a throwaway database
 * (e2e/global-setup.ts starts it, migrates and seeds it, and passes its URL through a file).
 * Never downloads a browser: CHROMIUM_PATH or /usr/bin/chromium.
 */
import { defineConfig } from "@playwright/test";

// A port per test run (workers inherit it through the environment), so concurrent runs on one
// machine never talk to each other's server.
process.env.E2E_PORT ??= String(20_000 + Math.floor(Math.random() * 20_000));
const port = Number(process.env.E2E_PORT);

export default defineConfig({
  testDir: "e2e",
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  globalSetup: "./e2e/global-setup.ts",
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    },
  },
});
