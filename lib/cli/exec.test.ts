/**
 * `airlock exec` leaves nothing on the host: when the command returns (and the CLI exits), the
 * sandbox's temporary directories and its scratch mount are gone, whether the run succeeded or not.
 * Real sandbox, real database (the tool pins), no upstreams.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { execCommand } from "./exec";
import type { CliIo } from "./io";

const dir = mkdtempSync(join(tmpdir(), "airlock-exec-test-"));
const config = join(dir, "airlock.config.json");
writeFileSync(config, JSON.stringify({ servers: {} }));
writeFileSync(join(dir, "ok.js"), `const fs = await import("node:fs"); fs.writeFileSync("out/report.txt", "x"); return 1;`);
writeFileSync(join(dir, "fails.js"), `throw new Error("no");`);

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
});
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** This process's sandbox directories, and mounts below them. */
function leftovers(): string[] {
  const prefix = join(tmpdir(), `airlock-sbx-${process.pid}-`);
  const dirs = readdirSync(tmpdir()).map((name) => join(tmpdir(), name));
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "");
  return [...dirs, ...mounts].filter((path) => path.startsWith(prefix));
}

it.each([
  ["ok.js", 0],
  ["fails.js", 1],
])("airlock exec %s returns %i with the sandbox's directories and scratch mount already removed", async (file, expected) => {
  let out = "";
  const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (out += s), readStdin: async () => "" };
  expect(await execCommand([join(dir, file), "--config", config], io)).toBe(expected);
  expect(out).toMatch(/^status: (succeeded|failed)/m);
  expect(leftovers()).toEqual([]);
});
