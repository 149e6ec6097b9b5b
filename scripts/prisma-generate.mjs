#!/usr/bin/env node
// Runs `prisma generate` without the native schema engine, which cannot be downloaded on
// machines without access to Prisma's binary host: generate only asks the engine for its version,
// so a stub that prints one is enough. Where a real engine is configured, it is used instead.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1" };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const dir = join(tmpdir(), "airlock-prisma-stub");
  mkdirSync(dir, { recursive: true });
  const stub = join(dir, "schema-engine");
  writeFileSync(stub, "#!/bin/sh\necho 'schema-engine-cli 0edf323efd1d98336f3f0a68684b56f689b900d3'\n");
  chmodSync(stub, 0o755);
  env.PRISMA_SCHEMA_ENGINE_BINARY = stub;
}
const result = spawnSync("npx", ["prisma", "generate"], { stdio: "inherit", env });
process.exit(result.status ?? 1);
