/**
 * The decision form's wire format: what the run page renders as fields (hidden `seen.*` values
 * included) and how a submitted FormData or JSON body becomes decideRun's input. The schema is
 * closed; decideRun validates again and compares `seen` with the run row.
 */
import { z } from "zod";

const field = z.string().max(20_000);

const decisionFields = z
  .object({
    runId: field,
    verdict: field,
    comment: field.optional(),
    codeSha256: field,
    capabilitySet: field,
    inputsDigest: field,
    policyVersionId: field.optional(),
    planDigest: field.optional(),
  })
  .strict();

/** The names the decision form sends (lib/auth/user-action.ts actionForm refuses any other). */
export const DECISION_FORM_FIELDS = Object.keys(decisionFields.shape);

export const decisionFormSchema = decisionFields.transform((form, ctx) => {
  let capabilitySet: unknown;
  try {
    capabilitySet = JSON.parse(form.capabilitySet);
  } catch {
    ctx.addIssue({ code: "custom", path: ["capabilitySet"], message: "must be a JSON array" });
    return z.NEVER;
  }
  return {
    runId: form.runId,
    verdict: form.verdict,
    comment: form.comment,
    seen: {
      codeSha256: form.codeSha256,
      capabilitySet,
      inputsDigest: form.inputsDigest,
      policyVersionId: form.policyVersionId ? form.policyVersionId : null,
      planDigest: form.planDigest ? form.planDigest : null,
    },
  };
});

/** The release form (a withheld result): releaseResult's and withholdResult's input; they validate again. */
const releaseFields = z.object({ runId: field, comment: field, resultDigest: field }).strict();

/** The names the release form sends. */
export const RELEASE_FORM_FIELDS = Object.keys(releaseFields.shape);

export const releaseFormSchema = releaseFields.transform((form) => ({ runId: form.runId, comment: form.comment, seen: { resultDigest: form.resultDigest } }));

/** FormData → a plain object of its string fields (files and React's internal `$ACTION_*` fields dropped); see actionForm for repeats. */
export function formFields(form: FormData): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [key, value] of form.entries()) {
    if (typeof value === "string" && !key.startsWith("$ACTION")) out[key] = value;
  }
  return { ...out };
}
