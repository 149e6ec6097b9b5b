"use server";
/**
 * Legal holds from a run's audit page (audit:read, compliance): place one on the run or on its
 * agent, release one. Each goes through lib/audit/holds.ts, which audits it (hold.placed,
 * hold.released) in the same transaction.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { placeHold, releaseHold } from "@/lib/audit/holds";
import type { HoldActionState } from "@/components/audit/legal-hold";
import { actionForm, userAction } from "@/lib/auth/user-action";
import { prisma } from "@/lib/db";

const place = userAction(
  "audit:read",
  z.object({ runId: z.uuid(), on: z.enum(["run", "agent"]), reason: z.string() }).strict(),
  async (actor, { runId, on, reason }) => {
    await prisma().$transaction((tx) => placeHold(tx, actor, on === "run" ? { runId, reason } : { agentOfRunId: runId, reason }));
    return { done: "placed" as const };
  },
);

const release = userAction("audit:read", z.object({ holdId: z.uuid(), reason: z.string() }).strict(), async (actor, input) => {
  await prisma().$transaction((tx) => releaseHold(tx, actor, input));
  return { done: "released" as const };
});

export async function placeHoldAction(_previous: HoldActionState, sent: FormData): Promise<HoldActionState> {
  const read = actionForm(sent, ["runId", "on", "reason"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await place({ runId: form.get("runId"), on: form.get("on"), reason: form.get("reason") });
  if (result.ok) revalidatePath(`/audit/runs/${String(form.get("runId"))}`);
  return result;
}

export async function releaseHoldAction(_previous: HoldActionState, sent: FormData): Promise<HoldActionState> {
  const read = actionForm(sent, ["runId", "holdId", "reason"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await release({ holdId: form.get("holdId"), reason: form.get("reason") });
  if (result.ok) revalidatePath(`/audit/runs/${String(form.get("runId"))}`);
  return result;
}
