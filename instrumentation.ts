/**
 * Next's start-up hook: in the Node.js server, start tracing if configured, stamp every request
 * with its TCP peer (the sign-in throttle's client address, lib/auth/client-address.ts), then
 * start the run runtime at boot (broker, and with AIRLOCK_IN_PROCESS_WORKER the executor), so
 * queued runs are executed even before the first request arrives. Nothing happens where there is no database (e.g. during `next build`).
 */
export async function register() {
  // eslint-disable-next-line no-restricted-syntax -- Next's own runtime marker, not configuration
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Traces, when an OTLP endpoint is configured (lib/tracing-sdk.ts, which exports Airlock's spans
  // only); before anything makes a span.
  const { startTracing } = await import("@/lib/tracing-sdk");
  await startTracing("airlock-web");
  const { installPeerStamp } = await import("@/lib/auth/client-address");
  installPeerStamp();
  const { startAppRuntimeAtBoot } = await import("@/lib/runs/boot");
  await startAppRuntimeAtBoot();
}
