/**
 * Next's start-up hook: in the Node.js server, start tracing if configured, stamp every request with its TCP peer (the sign-in
 * throttle's client address, lib/auth/client-address.ts), then start the run runtime at boot
 * (broker, and with AIRLOCK_IN_PROCESS_WORKER the executor), so queued runs are executed even
 * before the first request arrives. Nothing happens where there is no database (e.g. during `next build`).
 */
export async function register() {
  // eslint-disable-next-line no-restricted-syntax -- Next's own runtime marker, not configuration
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Traces, when an OTLP endpoint is configured (lib/tracing-sdk.ts); before anything makes a span.
  // Next's own fetch spans are left out: their names are whole URLs (a WebAssembly module inlined
  // as a data: URL is 200 KB), and Airlock's spans already cover every tool call.
  // eslint-disable-next-line no-restricted-syntax -- Next's own switch, read by Next on every fetch
  process.env.NEXT_OTEL_FETCH_DISABLED ??= "1";
  const { startTracing } = await import("@/lib/tracing-sdk");
  await startTracing("airlock-web");
  const { installPeerStamp } = await import("@/lib/auth/client-address");
  installPeerStamp();
  const { startAppRuntimeAtBoot } = await import("@/lib/runs/boot");
  await startAppRuntimeAtBoot();
}
