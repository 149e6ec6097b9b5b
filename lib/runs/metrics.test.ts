/**
 * /api/health and /api/metrics, their route handlers on a real PostgreSQL: the health answer names
 * nothing; the metrics count what is there (a queued run, a staged audit event waiting to be
 * chained) in the Prometheus text format; AIRLOCK_METRICS_TOKEN closes them to anyone without it.
 */
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stageAuditEvents } from "@/lib/audit/record";
import { setEnvForChildren } from "@/lib/env";
import { metrics } from "./metrics";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent } from "@/lib/testing/run-rows";

const system = { type: "system", name: "test" } as const;
let db: TestDatabase;

beforeAll(async () => {
  let agentId: string;
  ({ db, agentId } = await databaseWithAgent("metrics-bot"));
  setEnvForChildren({ DATABASE_URL: db.url, AIRLOCK_METRICS_TOKEN: "" });
  await db.prisma.run.create({
    data: {
      agentId,
      status: "queued",
      language: "javascript",
      code: "return 1;",
      codeSha256: "x",
      purpose: "a secret purpose",
      inputsDigest: "none",
      requestDigest: "x",
      updatedAt: new Date(Date.now() - 90_000),
    },
  });
});
afterAll(() => db?.drop());

const get = (path: string, headers: Record<string, string> = {}) => new NextRequest(`http://127.0.0.1:3000${path}`, { headers });

describe("/api/health", () => {
  it("answers ok with the database reached, and names nothing else", async () => {
    const { GET } = await import("@/app/api/health/route");
    const response = await GET();
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["at", "database", "status"]);
    expect(body).toMatchObject({ status: "ok", database: "ok" });
  });
});

describe("/api/metrics", () => {
  it("counts queued runs, their wait and the staged audit events, in the exposition format, with no run content", async () => {
    await db.prisma.$transaction((tx) =>
      stageAuditEvents(tx, [{ actor: system, action: "test.waiting", subject: { type: "thing" } }], new Date(Date.now() - 30_000)),
    );
    const { GET } = await import("@/app/api/metrics/route");
    const response = await GET(get("/api/metrics"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    for (const line of text.trim().split("\n")) {
      expect(line).toMatch(/^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\{status="[a-z_]+"\})? \d+(\.\d+)?)$/);
    }
    expect(text).toContain("\nairlock_queue_depth 1\n");
    expect(Number(/\nairlock_oldest_wait_seconds (\S+)/.exec(text)![1])).toBeGreaterThanOrEqual(89);
    expect(text).toContain('\nairlock_runs_total{status="queued"} 1\n');
    expect(text).toContain('\nairlock_runs_total{status="succeeded"} 0\n');
    expect(text).toContain("\nairlock_executor_slots_busy 0\n");
    expect(text).toMatch(/\nairlock_audit_pending_events [1-9]\d*\n/);
    expect(Number(/\nairlock_audit_append_seconds (\S+)/.exec(text)![1])).toBeGreaterThanOrEqual(29);
    expect(text).not.toMatch(/secret purpose|metrics-bot|owner@example/);
    // No runtime started in this process: no upstream counted as unavailable.
    expect(text).toContain("\nairlock_upstreams_unavailable 0\n");
    // With a runtime that could not connect to two of its upstreams: two, and no names.
    const counted = await metrics(db.prisma, { unavailableUpstreams: 2 });
    expect(counted).toContain("\nairlock_upstreams_unavailable 2\n");
  });

  it("with AIRLOCK_METRICS_TOKEN, answers only its Bearer: anything else is a 401 that says nothing of the metrics", async () => {
    setEnvForChildren({ AIRLOCK_METRICS_TOKEN: "metrics-token-0123456789" });
    try {
      const { GET } = await import("@/app/api/metrics/route");
      const attempts: Record<string, string>[] = [
        {},
        { authorization: "Bearer wrong-token-0123456789" },
        { authorization: "metrics-token-0123456789" },
        { authorization: "Bearer " },
      ];
      for (const headers of attempts) {
        const refused = await GET(get("/api/metrics", headers));
        expect(refused.status, JSON.stringify(headers)).toBe(401);
        expect(await refused.text()).not.toContain("airlock_");
      }
      const allowed = await GET(get("/api/metrics", { authorization: "Bearer metrics-token-0123456789" }));
      expect(allowed.status).toBe(200);
      expect(await allowed.text()).toContain("airlock_queue_depth");
    } finally {
      setEnvForChildren({ AIRLOCK_METRICS_TOKEN: "" });
    }
  });

  it("refuses a token shorter than 16 characters at start-up, naming the variable", async () => {
    const { parseEnv } = await import("@/lib/env");
    expect(() => parseEnv({ AIRLOCK_METRICS_TOKEN: "short" })).toThrow(/AIRLOCK_METRICS_TOKEN/);
  });
});
