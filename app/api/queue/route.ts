/**
 * GET /api/queue?agent=&effect= — the review queue for the signed-in reviewer (polled by the queue
 * page). The query is closed: another parameter, a repeated one, an empty or over-long agent, or an
 * effect that is not one of read_only, write, destructive is 400 naming it.
 */
import { z } from "zod";
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { invalidArguments } from "@/lib/errors";
import { queueView } from "@/lib/review/queue-presenter";
import { EFFECTS } from "@/lib/review/risk";

export const dynamic = "force-dynamic";

const QUERY = z.strictObject({ agent: z.string().min(1).max(200).optional(), effect: z.enum(EFFECTS).optional() });

export const GET = userRoute(
  "runs:review",
  async (user, request) => {
    const query = QUERY.safeParse(Object.fromEntries(request.nextUrl.searchParams));
    if (!query.success) throw invalidArguments(query.error);
    return queueView(prisma(), user, query.data);
  },
  { query: Object.keys(QUERY.shape) },
);
