/** GET /api/queue?agent=&effect= — the review queue for the signed-in reviewer (polled by the queue page). */
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { parseQueueFilters, queueView } from "@/lib/review/queue-presenter";

export const dynamic = "force-dynamic";

export const GET = userRoute("runs:review", async (user, request) => queueView(prisma(), user, parseQueueFilters(request.nextUrl.searchParams)));
