/**
 * Starts the web process's run runtime at server boot (see instrumentation.ts); logs, never throws.
 *
 * When Next leaves signals to us (NEXT_MANUAL_SIG_HANDLE=true, as `npm start` runs it), SIGTERM
 * and SIGINT drain the in-process executor first: runs in flight finish (or fail explicitly with
 * EXECUTOR_LOST past the drain time) before the process exits, so none is left `running`.
 */
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { stopTracing } from "@/lib/tracing-sdk";
import { appRuntime } from "./runtime";

export async function startAppRuntimeAtBoot(): Promise<void> {
  const config = env();
  if (!config.DATABASE_URL) return;
  try {
    const runtime = await appRuntime(prisma());
    if (config.NEXT_MANUAL_SIG_HANDLE === "true") {
      let draining = false;
      const drain = (code: number) => {
        if (draining) return;
        draining = true;
        void runtime
          .close()
          .catch((error: unknown) => console.error("airlock: draining the executor failed:", error))
          .then(() => stopTracing())
          .catch((error: unknown) => console.error("airlock: exporting the last spans failed:", error))
          .finally(() => process.exit(code));
      };
      process.once("SIGTERM", () => drain(0));
      process.once("SIGINT", () => drain(0));
    }
  } catch (error) {
    console.error("airlock: the run runtime did not start (it is retried on the next MCP request):", error);
  }
}
