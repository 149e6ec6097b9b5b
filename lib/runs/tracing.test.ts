/**
 * Traces of a run, received the way a collector receives them: the OpenTelemetry SDK is started
 * from the standard OTEL_* variables (lib/tracing-sdk.ts) and exports OTLP over HTTP to a receiver
 * in this test. An escalated refund goes submit → analysis → decision → preview → two reviews →
 * run → tool calls on real parts (PostgreSQL, the strict sandbox, the demo ledger); every span names
 * the run, and all of them are one trace, joined through the traceparent the run stores; an agent's
 * traceparent does not choose it, and no other tracer's span (Next's) is exported. Without an
 * endpoint nothing starts and no traceparent is stored.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { submitRun } from "@/lib/intake/submit";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { reviewedToEnd } from "@/lib/testing/review";
import { contextOf, traceparentOf } from "@/lib/tracing";
import { startTracing, stopTracing, tracingConfigured } from "@/lib/tracing-sdk";
import { context, trace } from "@opentelemetry/api";
import { getRun } from "./service";

type OtlpValue = { stringValue?: string; intValue?: string | number };
type OtlpSpan = { name: string; traceId: string; spanId: string; parentSpanId?: string; attributes: { key: string; value: OtlpValue }[] };
type OtlpExport = { resourceSpans: { resource: { attributes: { key: string; value: OtlpValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };

const received: OtlpExport[] = [];
let receiver: Server;
let ledger: LedgerRuntime;
const reviewers: Extract<Actor, { type: "user" }>[] = [];

function attribute(span: OtlpSpan, key: string): string | number | undefined {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
}

function spans(): OtlpSpan[] {
  return received.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
}

beforeAll(async () => {
  receiver = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      if (request.url === "/v1/traces" && request.headers["content-type"]?.startsWith("application/json")) received.push(JSON.parse(text) as OtlpExport);
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  ledger = await startLedgerRuntime("traced-bot");
  const system: Actor = { type: "system", name: "test" };
  for (const email of ["tess@example.com", "tom@example.com"]) {
    const made = await ledger.db.prisma.$transaction((tx) => createUser(tx, system, { email, role: "reviewer" }));
    reviewers.push({ type: "user", id: made.id, email, role: "reviewer" });
  }
}, 90_000);

afterAll(async () => {
  await stopTracing();
  await ledger?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe("off by default", () => {
  it("starts nothing without an endpoint, and a run stores no traceparent", async () => {
    setEnvForChildren({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", OTEL_EXPORTER_OTLP_ENDPOINT: "" });
    expect(tracingConfigured()).toBe(false);
    expect(await startTracing("airlock-test")).toBe(false);
    const view = await submitRun(ledger.runtime, ledger.agent, { code: "return 1;", purpose: "untraced" });
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: view.runId } });
    expect(row.traceparent).toBeNull();
    // And the one switch-off: OTEL_SDK_DISABLED beats an endpoint.
    setEnvForChildren({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_SDK_DISABLED: "true" });
    expect(tracingConfigured()).toBe(false);
    setEnvForChildren({ OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_SDK_DISABLED: "" });
  });

  it("does not trust a malformed stored traceparent: a new trace starts", () => {
    for (const bad of ["", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-xyz"]) {
      expect(trace.getSpanContext(contextOf(bad))).toBeUndefined();
    }
    expect(trace.getSpanContext(contextOf("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))).toMatchObject({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      isRemote: true,
    });
  });
});

describe("a traced run", () => {
  it("is one trace from submit to the last tool call, every span naming the run", async () => {
    const { port } = receiver.address() as AddressInfo;
    setEnvForChildren({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" });
    expect(await startTracing("airlock-test")).toBe(true);
    // Spans of other tracers (Next's, which record whole URLs) are never exported.
    trace.getTracer("next.js").startSpan("GET /api/auth/callback/oidc?code=secret-code").end();

    const refund = { invoiceId: "inv_0002", amountMinor: 150, reason: "traced", idempotencyKey: "traced-refund-1" };
    const code = `const page = await tools.ledger.listInvoices({ limit: 2 });\nawait tools.ledger.issueRefund(${JSON.stringify(refund)});\nreturn page.invoices.length;`;
    // An agent's traceparent (here the active context, as Next makes it from the request's header,
    // unsampled) chooses neither the run's trace nor its sampling.
    const agentsTrace = "4a1ce000000000000000000000000000";
    const foreign = contextOf(`00-${agentsTrace}-00f067aa0ba902b7-00`);
    const { runId } = await context.with(foreign, () => submitRun(ledger.runtime, ledger.agent, { code, purpose: "a traced refund" }));
    const pending = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 30 });
    expect(pending.status).toBe("pending_review");
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(row.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect((await reviewedToEnd(ledger, reviewers, runId)).status).toBe("succeeded");
    await stopTracing(); // flushes every span to the receiver

    const mine = spans().filter((s) => attribute(s, "airlock.run_id") === runId);
    const names = mine.map((s) => s.name).sort();
    expect(names).toEqual([
      "airlock.analysis",
      "airlock.decision",
      "airlock.preview",
      "airlock.review",
      "airlock.review",
      "airlock.run",
      "airlock.submit",
      "airlock.tool_call", // preview: the read, made for real (the write is intercepted)
      "airlock.tool_call", // preview: the read again (the script is previewed twice)
      "airlock.tool_call", // run: the read
      "airlock.tool_call", // run: the write
    ]);
    const submit = mine.find((s) => s.name === "airlock.submit")!;
    expect(row.traceparent).toBe(`00-${submit.traceId}-${submit.spanId}-01`);
    expect(new Set(mine.map((s) => s.traceId))).toEqual(new Set([submit.traceId]));
    expect(submit.traceId).not.toBe(agentsTrace);
    expect(submit.parentSpanId ?? "").toBe("");
    expect(JSON.stringify(received)).not.toContain("secret-code");
    expect(spans().filter((s) => attribute(s, "airlock.run_id") === undefined)).toEqual([]);
    // Review and execution start from the stored parent, not from whatever the process had open.
    for (const name of ["airlock.analysis", "airlock.decision", "airlock.preview", "airlock.review", "airlock.run"]) {
      for (const span of mine.filter((s) => s.name === name)) expect({ name, parent: span.parentSpanId }).toEqual({ name, parent: submit.spanId });
    }
    const run = mine.find((s) => s.name === "airlock.run")!;
    const preview = mine.find((s) => s.name === "airlock.preview")!;
    const calls = mine.filter((s) => s.name === "airlock.tool_call");
    expect(calls.filter((s) => s.parentSpanId === run.spanId).map((s) => attribute(s, "airlock.tool"))).toEqual(["ledger.listInvoices", "ledger.issueRefund"]);
    expect(calls.filter((s) => s.parentSpanId === preview.spanId).map((s) => attribute(s, "airlock.tool"))).toEqual([
      "ledger.listInvoices",
      "ledger.listInvoices",
    ]);
    expect(attribute(run, "airlock.status")).toBe("succeeded");
    expect(mine.filter((s) => s.name === "airlock.review").map((s) => attribute(s, "airlock.verdict"))).toEqual(["approve", "approve"]);
    expect(
      attribute(
        mine.find((s) => s.name === "airlock.decision")!,
        "airlock.decision",
      ),
    ).toBe("escalate");
    // Spans name things, never carry content: no span attribute holds the refund's reason.
    expect(JSON.stringify(mine)).not.toContain("traced-refund-1");
    const service = received[0]!.resourceSpans[0]!.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue;
    expect(service).toBe("airlock-test");
  }, 90_000);

  it("formats no traceparent for a span that is not recorded", () => {
    expect(traceparentOf(trace.wrapSpanContext({ traceId: "0".repeat(32), spanId: "0".repeat(16), traceFlags: 0 }))).toBeNull();
  });
});
