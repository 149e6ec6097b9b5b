/**
 * Starts OpenTelemetry's Node SDK for this process, only when an OTLP endpoint is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and `OTEL_SDK_DISABLED`
 * is not `true`; otherwise nothing is loaded and lib/tracing.ts stays a no-op. The OTLP exporter
 * (`http/protobuf` by default, or `http/json`) reads the standard `OTEL_EXPORTER_OTLP_*` variables
 * itself (endpoint, headers, timeout).
 *
 * Guarantees:
 * - only Airlock's own spans (tracer "airlock", lib/tracing.ts) are exported: Next's request and
 *   render spans record whole URLs (an OIDC callback's code, an audit search's terms), so they are
 *   dropped before export; no automatic instrumentation, metrics or logs are started;
 * - at most one SDK per process; `stopTracing` flushes the spans not yet exported, and gives up
 *   after STOP_TIMEOUT_MS so an unreachable collector cannot hold up a shutdown.
 * Refused: `grpc` as the protocol (a setting error naming the variable, lib/env.ts).
 */
import type { Context } from "@opentelemetry/api";
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace";
import { env } from "@/lib/env";

const STOP_TIMEOUT_MS = 5_000;

let sdk: { shutdown(): Promise<void> } | null = null;

/** Whether this process's environment asks for traces. */
export function tracingConfigured(): boolean {
  const config = env();
  return config.OTEL_SDK_DISABLED !== "true" && Boolean(config.OTEL_EXPORTER_OTLP_ENDPOINT || config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Passes on the spans of Airlock's tracer only. */
class AirlockSpansOnly implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}
  onStart(_span: Span, _parent: Context): void {}
  onEnd(span: ReadableSpan): void {
    if (span.instrumentationScope.name === "airlock") this.next.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

/** Starts tracing if configured; `serviceName` applies unless OTEL_SERVICE_NAME names another. Resolves to whether it is on. */
export async function startTracing(serviceName: string): Promise<boolean> {
  if (sdk) return true;
  if (!tracingConfigured()) return false;
  const config = env();
  const protocol = config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf";
  const [{ NodeSDK }, { BatchSpanProcessor }] = await Promise.all([import("@opentelemetry/sdk-node"), import("@opentelemetry/sdk-trace")]);
  const exporter =
    protocol === "http/json"
      ? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter()
      : new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter();
  const started = new NodeSDK({
    serviceName: config.OTEL_SERVICE_NAME ?? serviceName,
    spanProcessors: [new AirlockSpansOnly(new BatchSpanProcessor({ exporter }))],
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
  });
  started.start();
  sdk = started;
  return true;
}

/** Exports what is buffered and stops tracing (at shutdown, and in tests), within STOP_TIMEOUT_MS. */
export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = null;
  if (!running) return;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS).unref()));
  await Promise.race([running.shutdown(), timeout]).finally(() => clearTimeout(timer));
}
