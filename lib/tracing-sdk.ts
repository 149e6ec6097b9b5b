/**
 * Starts OpenTelemetry's Node SDK for this process, only when an OTLP endpoint is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and `OTEL_SDK_DISABLED`
 * is not `true`; otherwise it does nothing and lib/tracing.ts stays a no-op. The exporter is the
 * SDK's own, configured by the standard `OTEL_*` variables (protocol, headers, timeouts); no
 * automatic instrumentation is loaded: the spans are Airlock's own (lib/tracing.ts).
 *
 * Guarantees: at most one SDK per process; `stopTracing` flushes the spans not yet exported.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import { env } from "@/lib/env";

let sdk: NodeSDK | null = null;

/** Whether this process's environment asks for traces. */
export function tracingConfigured(): boolean {
  const config = env();
  return config.OTEL_SDK_DISABLED !== "true" && Boolean(config.OTEL_EXPORTER_OTLP_ENDPOINT || config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Starts tracing if configured; `serviceName` applies unless OTEL_SERVICE_NAME names another. Returns whether it is on. */
export function startTracing(serviceName: string): boolean {
  if (sdk) return true;
  if (!tracingConfigured()) return false;
  sdk = new NodeSDK({ serviceName: env().OTEL_SERVICE_NAME ?? serviceName, instrumentations: [] });
  sdk.start();
  return true;
}

/** Exports what is buffered and stops tracing (at shutdown, and in tests). */
export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = null;
  await running?.shutdown();
}
