/** GET /api/queue/count — how many runs wait for the signed-in reviewer (the navigation badge). */
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { waitingForYouCount } from "@/lib/review/queue-presenter";

export const dynamic = "force-dynamic";

export const GET = userRoute("runs:review", async (user) => ({ waitingForYou: await waitingForYouCount(prisma(), user) }));
