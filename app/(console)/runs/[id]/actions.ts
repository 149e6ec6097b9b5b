"use server";
/**
 * Server actions of the run page. Each goes through userAction (parse → actor → scope) and calls
 * the same service function as the JSON route; none has logic of its own.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { prisma } from "@/lib/db";
import { DECISION_FORM_FIELDS, decisionFormSchema, formFields, RELEASE_FORM_FIELDS, releaseFormSchema } from "@/lib/review/forms";
import { releaseResult, withholdResult, type ReleaseResult, type WithholdResult } from "@/lib/review/release";
import { decideRun, type DecisionResult } from "@/lib/review/service";
import { actionForm, userAction, type ActionResult } from "@/lib/auth/user-action";
import { cancelRun } from "@/lib/runs/cancel";
import { appRuntime } from "@/lib/runs/runtime";

export type DecisionState = ActionResult<DecisionResult> | null;
export type CancelState = ActionResult<{ runId: string; status: string }> | null;
export type ReleaseState = ActionResult<ReleaseResult> | null;
export type WithholdState = ActionResult<WithholdResult> | null;

const decide = userAction("runs:review", decisionFormSchema, async (actor, input) =>
  decideRun({ db: prisma(), startExecution: (await appRuntime(prisma())).startExecution }, actor, input),
);
const release = userAction("runs:review", releaseFormSchema, (actor, input) => releaseResult(prisma(), actor, input));
const withhold = userAction("runs:review", releaseFormSchema, (actor, input) => withholdResult(prisma(), actor, input));
const cancel = userAction("runs:review", z.object({ runId: z.uuid("runId must be a run id") }).strict(), (actor, input) =>
  cancelRun({ db: prisma() }, actor, input.runId),
);

export async function decideAction(_previous: DecisionState, sent: FormData): Promise<DecisionState> {
  const read = actionForm(sent, DECISION_FORM_FIELDS);
  if (!read.ok) return read;
  const result = await decide(formFields(read.form));
  if (result.ok) {
    revalidatePath(`/runs/${result.data.runId}`);
    revalidatePath("/queue");
  }
  return result;
}

export async function cancelAction(_previous: CancelState, sent: FormData): Promise<CancelState> {
  const read = actionForm(sent, ["runId"]);
  if (!read.ok) return read;
  const result = await cancel(formFields(read.form));
  if (result.ok) revalidatePath(`/runs/${result.data.runId}`);
  return result;
}

export async function releaseAction(_previous: ReleaseState, sent: FormData): Promise<ReleaseState> {
  const read = actionForm(sent, RELEASE_FORM_FIELDS);
  if (!read.ok) return read;
  const result = await release(formFields(read.form));
  if (result.ok) {
    revalidatePath(`/runs/${result.data.runId}`);
    revalidatePath("/queue");
  }
  return result;
}

export async function withholdAction(_previous: WithholdState, sent: FormData): Promise<WithholdState> {
  const read = actionForm(sent, RELEASE_FORM_FIELDS);
  if (!read.ok) return read;
  const result = await withhold(formFields(read.form));
  if (result.ok) {
    revalidatePath(`/runs/${result.data.runId}`);
    revalidatePath("/queue");
  }
  return result;
}
