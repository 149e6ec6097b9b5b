"use server";
/**
 * Tools page actions (tools:manage), through the one action wrapper: accept a quarantined tool
 * (the first admin's acceptance is a request; a second admin's pins the definition), and override
 * a tool's hints and data class (one admin proposes, a different admin confirms; lib/broker/admin.ts).
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { acceptTool, confirmOverride, proposeOverride } from "@/lib/broker/admin";
import { applyOverrides } from "@/lib/broker/db-registry";
import { OVERRIDE_HINTS, type OverrideFacts } from "@/lib/broker/overrides";
import { DATA_CLASSES } from "@/lib/contracts/data-classes";
import { prisma } from "@/lib/db";
import { appRuntime } from "@/lib/runs/runtime";
import { actionForm, userAction, type ActionResult } from "@/lib/auth/user-action";

export type AcceptState = ActionResult<{ server: string; tool: string; outcome: "requested" | "accepted" }> | null;

const accept = userAction(
  "tools:manage",
  z.object({ server: z.string().min(1).max(64), tool: z.string().min(1).max(128), schemaHash: z.string().regex(/^[0-9a-f]{64}$/) }).strict(),
  async (actor, input) => {
    const accepted = await acceptTool(prisma(), actor, input);
    // Once pinned, lift the quarantine in this process's broker too — only if it holds the
    // definition the admins saw (an upstream may show different processes different definitions).
    if (accepted.outcome === "accepted") await (await appRuntime(prisma())).broker.accept(input.server, input.tool, accepted.pinnedHash);
    return { server: accepted.server, tool: accepted.tool, outcome: accepted.outcome };
  },
);

export async function acceptToolAction(_previous: AcceptState, sent: FormData): Promise<AcceptState> {
  const read = actionForm(sent, ["server", "tool", "schemaHash"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await accept({ server: form.get("server"), tool: form.get("tool"), schemaHash: form.get("schemaHash") });
  if (result.ok) revalidatePath("/tools");
  return result;
}

export type OverrideState = ActionResult<{ server: string; tool: string; overrideId: string }> | null;

const toolName = { server: z.string().min(1).max(64), tool: z.string().min(1).max(128) };
/** A hint's field: "claim" keeps the upstream's claim, "true"/"false" override it. */
const hintField = z.enum(["claim", "true", "false"]);

const propose = userAction(
  "tools:manage",
  z.strictObject({
    ...toolName,
    readOnlyHint: hintField,
    destructiveHint: hintField,
    idempotentHint: hintField,
    openWorldHint: hintField,
    dataClass: z.enum(["config", ...DATA_CLASSES]),
  }),
  async (actor, input) => {
    const facts: OverrideFacts = { annotations: {} };
    for (const hint of OVERRIDE_HINTS) if (input[hint] !== "claim") facts.annotations[hint] = input[hint] === "true";
    if (input.dataClass !== "config") facts.dataClass = input.dataClass;
    return proposeOverride(prisma(), actor, { server: input.server, tool: input.tool, facts });
  },
);

const confirm = userAction("tools:manage", z.strictObject({ ...toolName, overrideId: z.uuid() }), async (actor, input) => {
  const confirmed = await confirmOverride(prisma(), actor, input);
  // In force from now on: this process's broker relies on it at once (others at their next start).
  await applyOverrides(prisma(), (await appRuntime(prisma())).broker.tools());
  return confirmed;
});

export async function proposeOverrideAction(_previous: OverrideState, sent: FormData): Promise<OverrideState> {
  const fields = ["server", "tool", ...OVERRIDE_HINTS, "dataClass"] as const;
  const read = actionForm(sent, fields);
  if (!read.ok) return read;
  const { form } = read;
  const result = await propose(Object.fromEntries(fields.map((field) => [field, form.get(field)])));
  if (result.ok) revalidatePath("/tools");
  return result;
}

export async function confirmOverrideAction(_previous: OverrideState, sent: FormData): Promise<OverrideState> {
  const read = actionForm(sent, ["server", "tool", "overrideId"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await confirm({ server: form.get("server"), tool: form.get("tool"), overrideId: form.get("overrideId") });
  if (result.ok) revalidatePath("/tools");
  return result;
}
