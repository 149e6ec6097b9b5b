#!/usr/bin/env node
// `npx airlock …`: runs the TypeScript CLI on the project's pinned Node 26 (node_modules/node),
// whatever Node invoked this file, so commands behave the same as npm scripts.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pinned = join(root, "node_modules", "node", "bin", "node");
const node = existsSync(pinned) ? pinned : process.execPath;
const child = spawn(
  node,
  [
    "--conditions=react-server",
    "--disable-warning=ExperimentalWarning",
    "--import",
    import.meta.resolve("tsx"),
    join(root, "lib", "cli", "main.ts"),
    ...process.argv.slice(2),
  ],
  // From any directory: the project's tsconfig resolves its `@/` imports (tsx reads the cwd's otherwise).
  { stdio: "inherit", cwd: process.cwd(), env: { ...process.env, TSX_TSCONFIG_PATH: join(root, "tsconfig.json") } },
);
// The command owns its end: Ctrl-C reaches it from the terminal (same process group), and it stops
// what it started (a database) before it exits, so this waits for it instead of dying first and
// handing the prompt back early; a SIGTERM sent to this process is passed on.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
child.on("error", (error) => {
  console.error(`airlock: could not start Node: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1)));
