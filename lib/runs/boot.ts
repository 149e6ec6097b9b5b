/** Starts the web process's run runtime at server boot (see instrumentation.ts); logs, never throws. */
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { appRuntime } from "./runtime";

export async function startAppRuntimeAtBoot(): Promise<void> {
  if (!env().DATABASE_URL) return;
  try {
    await appRuntime(prisma());
  } catch (error) {
    console.error("airlock: the run runtime did not start (it is retried on the next MCP request):", error);
  }
}
