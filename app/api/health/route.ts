/** GET /api/health — anonymous: whether this process answers and reaches PostgreSQL (lib/runs/metrics.ts); 503 when not. No run content. */
import { NextResponse } from "next/server";
import { prisma } from "@/lib/db";
import { health } from "@/lib/runs/metrics";

export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  const answer = await health(prisma());
  return NextResponse.json(answer, { status: answer.status === "ok" ? 200 : 503, headers: { "cache-control": "no-store" } });
}
