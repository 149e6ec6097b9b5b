"use server";
/**
 * Policies page actions (policies:manage): check a draft (validation with line/column, then a
 * replay against recent proposals), save it as a draft version, or publish it. Each goes through
 * the one action wrapper; publishing and saving are audited by the service.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { prisma } from "@/lib/db";
import { validatePolicyText, type PolicyProblem } from "@/lib/policy/policy-set";
import { replayDraft, type ReplayRow } from "@/lib/policy/replay";
import { publishPolicyText, saveDraft } from "@/lib/policy/store";
import { userAction, type ActionResult } from "@/lib/auth/user-action";

export type DraftState = ActionResult<
  | { kind: "checked"; errors: PolicyProblem[]; warnings: PolicyProblem[]; replay: { rows: ReplayRow[]; changed: number } | null }
  | { kind: "saved" | "published"; version: number }
> | null;

const draftSchema = z.object({ text: z.string().min(1, "the draft is empty").max(200_000), intent: z.enum(["check", "save", "publish"]) }).strict();

const handle = userAction("policies:manage", draftSchema, async (actor, { text, intent }) => {
  const db = prisma();
  if (intent === "save") return { kind: "saved" as const, version: (await db.$transaction((tx) => saveDraft(tx, actor, text))).version };
  if (intent === "publish") return { kind: "published" as const, version: (await db.$transaction((tx) => publishPolicyText(tx, actor, text))).version };
  const validation = validatePolicyText(text);
  return {
    kind: "checked" as const,
    errors: validation.errors,
    warnings: validation.warnings,
    replay: validation.ok ? await replayDraft(db, text, 50) : null,
  };
});

export async function draftAction(_previous: DraftState, form: FormData): Promise<DraftState> {
  const result = await handle({ text: form.get("text"), intent: form.get("intent") });
  if (result.ok && result.data.kind !== "checked") revalidatePath("/policies");
  return result;
}
