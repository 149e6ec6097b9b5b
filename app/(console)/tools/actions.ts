"use server";
/** Tools page actions: accept a quarantined tool (tools:manage), through the one action wrapper. */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { acceptTool } from "@/lib/broker/admin";
import { prisma } from "@/lib/db";
import { appRuntime } from "@/lib/runs/runtime";
import { userAction, type ActionResult } from "@/lib/auth/user-action";

export type AcceptState = ActionResult<{ server: string; tool: string }> | null;

const accept = userAction(
  "tools:manage",
  z.object({ server: z.string().min(1).max(64), tool: z.string().min(1).max(128), schemaHash: z.string().regex(/^[0-9a-f]{64}$/) }).strict(),
  async (actor, input) => {
    const accepted = await acceptTool(prisma(), actor, input);
    // Lift the quarantine in this process's broker too — only if it holds the definition the admin
    // saw (an upstream may show different processes different definitions).
    await (await appRuntime(prisma())).broker.accept(input.server, input.tool, accepted.pinnedHash);
    return { server: accepted.server, tool: accepted.tool };
  },
);

export async function acceptToolAction(_previous: AcceptState, form: FormData): Promise<AcceptState> {
  const result = await accept({ server: form.get("server"), tool: form.get("tool"), schemaHash: form.get("schemaHash") });
  if (result.ok) revalidatePath("/tools");
  return result;
}
