/**
 * GET /api/metrics — the Prometheus exposition of lib/runs/metrics.ts. Anonymous unless
 * AIRLOCK_METRICS_TOKEN is set; then only `Authorization: Bearer <token>` (compared in constant
 * time) gets it, anything else a 401 with nothing in it. A database that cannot be reached is a 503.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { NextResponse, type NextRequest } from "next/server";
import { prisma } from "@/lib/db";
import { env } from "@/lib/env";
import { AppError, toPublicError } from "@/lib/errors";
import { metrics } from "@/lib/runs/metrics";
import { startedAppRuntime } from "@/lib/runs/runtime";

export const dynamic = "force-dynamic";

const digest = (text: string) => createHash("sha256").update(text).digest();

function authorized(request: NextRequest): boolean {
  const token = env().AIRLOCK_METRICS_TOKEN;
  if (!token) return true;
  const sent = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  return timingSafeEqual(digest(sent), digest(token));
}

export async function GET(request: NextRequest): Promise<Response> {
  if (!authorized(request)) {
    const error = toPublicError(new AppError("unauthorized", "Metrics need `Authorization: Bearer <AIRLOCK_METRICS_TOKEN>`."));
    return NextResponse.json({ error }, { status: error.status, headers: { "cache-control": "no-store", "www-authenticate": "Bearer" } });
  }
  try {
    // This process's runtime, if it started: the upstreams it could not connect to (none counted before it starts).
    const runtime = await startedAppRuntime()?.catch(() => undefined);
    const unavailableUpstreams = runtime?.registry.unavailableServers().length ?? 0;
    return new Response(await metrics(prisma(), { unavailableUpstreams }), {
      headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" },
    });
  } catch (error) {
    console.error("metrics: collecting failed", error);
    const failure = toPublicError(new AppError("database_unavailable", "The metrics could not be read from the database."));
    return NextResponse.json({ error: failure }, { status: failure.status, headers: { "cache-control": "no-store" } });
  }
}
