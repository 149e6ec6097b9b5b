"use server";
/** Agents page actions (agents:manage): create an agent with its first token, revoke an agent. */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { createAgent } from "@/lib/auth/agents";
import { revokeAgentAndStopRuns } from "@/lib/runs/cancel";
import { prisma } from "@/lib/db";
import { actionForm, userAction, type ActionResult } from "@/lib/auth/user-action";

export type CreateAgentState = ActionResult<{ name: string; token: string; scopes: string[] }> | null;
export type RevokeAgentState = ActionResult<{ revokedTokens: number }> | null;

const create = userAction(
  "agents:manage",
  z.object({ name: z.string(), ownerEmail: z.string(), scopes: z.array(z.string()).min(1, "choose at least one scope") }).strict(),
  (actor, input) => prisma().$transaction((tx) => createAgent(tx, actor, { ...input, scopes: input.scopes as never })),
);
const revoke = userAction("agents:manage", z.object({ name: z.string().min(1) }).strict(), (actor, input) =>
  prisma().$transaction((tx) => revokeAgentAndStopRuns(tx, actor, input.name)),
);

export async function createAgentAction(_previous: CreateAgentState, sent: FormData): Promise<CreateAgentState> {
  const read = actionForm(sent, ["name", "ownerEmail", "scopes"], ["scopes"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await create({ name: form.get("name"), ownerEmail: form.get("ownerEmail"), scopes: form.getAll("scopes") });
  if (result.ok) revalidatePath("/agents");
  return result.ok ? { ok: true, data: { name: result.data.name, token: result.data.token, scopes: result.data.scopes } } : result;
}

export async function revokeAgentAction(_previous: RevokeAgentState, sent: FormData): Promise<RevokeAgentState> {
  const read = actionForm(sent, ["name"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await revoke({ name: form.get("name") });
  if (result.ok) revalidatePath("/agents");
  return result;
}
