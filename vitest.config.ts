import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

export default defineConfig({
  resolve: {
    alias: {
      "@": fileURLToPath(new URL(".", import.meta.url)),
      // Tests run server code outside React's server bundle, where `server-only` is a no-op.
      "server-only": fileURLToPath(new URL("node_modules/server-only/empty.js", import.meta.url)),
    },
  },
  test: {
    include: ["lib/**/*.test.ts", "scripts/**/*.test.ts"],
    globalSetup: ["lib/testing/global-setup.ts"],
    // Run-change log lines (lib/log.ts) would drown the report; tests that read them turn them on.
    env: { AIRLOCK_LOG_LEVEL: "silent" },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // next-auth imports `next/server` without an extension, which Node's ESM resolver refuses; let Vite resolve it.
    server: { deps: { inline: ["next-auth"] } },
  },
});
