"use server";
/**
 * Policies page actions (policies:manage): check a draft (validation with line/column, then a
 * replay against recent proposals), save it as a draft version, propose it, or approve another
 * admin's proposed version (which publishes it). Each goes through the one action wrapper; the
 * services audit every change, and the wrapper records a refusal (approving your own proposal).
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { prisma } from "@/lib/db";
import { validatePolicyText, type PolicyProblem } from "@/lib/policy/policy-set";
import { replayDraft, type ReplayRow } from "@/lib/policy/replay";
import { approvePolicyVersion, proposePolicyText, saveDraft } from "@/lib/policy/store";
import { actionForm, userAction, type ActionResult } from "@/lib/auth/user-action";

export type DraftState = ActionResult<
  | { kind: "checked"; errors: PolicyProblem[]; warnings: PolicyProblem[]; replay: { rows: ReplayRow[]; changed: number } | null }
  | { kind: "saved" | "proposed"; version: number }
> | null;

const draftSchema = z.object({ text: z.string().min(1, "the draft is empty").max(200_000), intent: z.enum(["check", "save", "propose"]) }).strict();

const handle = userAction("policies:manage", draftSchema, async (actor, { text, intent }) => {
  const db = prisma();
  if (intent === "save") return { kind: "saved" as const, version: (await db.$transaction((tx) => saveDraft(tx, actor, text))).version };
  if (intent === "propose") return { kind: "proposed" as const, version: (await db.$transaction((tx) => proposePolicyText(tx, actor, text))).version };
  const validation = validatePolicyText(text);
  return {
    kind: "checked" as const,
    errors: validation.errors,
    warnings: validation.warnings,
    replay: validation.ok ? await replayDraft(db, text, 50) : null,
  };
});

export async function draftAction(_previous: DraftState, sent: FormData): Promise<DraftState> {
  const read = actionForm(sent, ["text", "intent"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await handle({ text: form.get("text"), intent: form.get("intent") });
  if (result.ok && result.data.kind !== "checked") revalidatePath("/policies");
  return result;
}

export type ApproveState = ActionResult<{ version: number }> | null;

const approve = userAction(
  "policies:manage",
  z
    .object({
      version: z
        .string()
        .regex(/^[1-9]\d{0,9}$/, "must be a version number, in digits")
        .transform(Number)
        .pipe(z.number().max(2_147_483_647)),
    })
    .strict(),
  async (actor, { version }) => ({
    version: (await prisma().$transaction((tx) => approvePolicyVersion(tx, actor, version))).version,
  }),
);

export async function approveAction(_previous: ApproveState, sent: FormData): Promise<ApproveState> {
  const read = actionForm(sent, ["version"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await approve({ version: form.get("version") });
  if (result.ok) revalidatePath("/policies");
  return result;
}
