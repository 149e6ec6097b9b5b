/**
 * Traces of a run (OpenTelemetry API only): submit → analysis → decision → review → run → each
 * tool call, every span carrying `airlock.run_id`. A run stores the `traceparent` of its submit
 * span, and every later span of the run — a review hours later, an execution in another process —
 * starts from that stored parent, so one trace spans processes and time.
 *
 * Guarantees:
 * - off by default: until lib/tracing-sdk.ts registers a tracer provider (only when an OTLP
 *   endpoint is configured), every span here is a no-op and no traceparent is stored;
 * - a span ends however its work ends; a thrown error marks it as failed (its message is not
 *   recorded: it can carry run content);
 * - spans carry identifiers and names only (run id, agent id, tool name, status), never code,
 *   arguments or results.
 * - a run's trace starts at its submission (ROOT_CONTEXT): a traceparent an agent sends with its
 *   request chooses neither the trace id nor the sampling of its run;
 * Refused: a stored traceparent that is not W3C version 00 with valid ids starts a new trace
 * instead of being trusted.
 */
import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, isSpanContextValid, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";

export { ROOT_CONTEXT };

/** The attribute naming the run a span belongs to. */
export const RUN_ID = "airlock.run_id";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function tracer() {
  return trace.getTracer("airlock");
}

/** The W3C traceparent of a span, or null when tracing is off. */
export function traceparentOf(span: Span): string | null {
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The context a stored traceparent stands for; the root context (a new trace) when there is none or it is malformed. */
export function contextOf(traceparent: string | null | undefined): Context {
  const [, traceId, spanId, flags] = (traceparent ? TRACEPARENT.exec(traceparent) : null) ?? [];
  if (!traceId || !spanId || !flags) return ROOT_CONTEXT;
  const spanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** The context of a live span, for children started later (e.g. tool calls made by a sandbox). */
export function contextWith(span: Span): Context {
  return trace.setSpan(ROOT_CONTEXT, span);
}

/**
 * Runs `work` in a span named `name` under `parent` (a context from contextOf/contextWith); the
 * span ends when the work settles, marked as an error if it throws.
 */
export async function inSpan<T>(name: string, parent: Context, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer().startSpan(name, { attributes }, parent);
  try {
    return await work(span);
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** `inSpan` for synchronous work (analysis, a policy decision). */
export function inSpanSync<T>(name: string, parent: Context, attributes: Attributes, work: (span: Span) => T): T {
  const span = tracer().startSpan(name, { attributes }, parent);
  try {
    return work(span);
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The error's name only: its message can carry run content. */
function markFailed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
}
