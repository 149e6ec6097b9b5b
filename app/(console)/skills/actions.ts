"use server";
/**
 * Skill pages' actions, each through the one action wrapper (parse → person → scope) and one
 * service function, which checks the scope again and audits the change:
 * - draftSkillAction (skills:manage): stores a pattern's proposal, with the admin's name,
 *   description, bound arguments and, when edited, schemas, as a draft version; then opens it.
 * - replaySkillAction (skills:manage): replays a draft's tests in the sandbox (lib/skills/replay.ts).
 * - reviewSkillAction (skills:review): a reviewer approves or rejects a draft, bound to the digest seen.
 * - proposeStandingAction, confirmStandingAction, revokeStandingAction (skills:manage): standing
 *   approvals of a published version, four eyes (lib/skills/standing.ts).
 * Form text is parsed here only into the services' input shapes (JSON, numbers, dates); a field
 * that does not parse is a `bad_request` naming it, never a crash.
 */
import { revalidatePath } from "next/cache";
import { redirect } from "next/navigation";
import { z } from "zod";
import { actionForm, userAction, type ActionResult } from "@/lib/auth/user-action";
import { prisma } from "@/lib/db";
import { analyzeAgainst } from "@/lib/intake/analyze";
import { appRuntime } from "@/lib/runs/runtime";
import { runInSandbox } from "@/lib/sandbox";
import { replaySkillTests } from "@/lib/skills/replay";
import { draftSkill, reviewSkillVersion, type DraftedSkill, type ReviewResult, type TestReport } from "@/lib/skills/service";
import { confirmStandingApproval, proposeStandingApproval, revokeStandingApproval } from "@/lib/skills/standing";

const text = (max: number) => z.string().max(max);

/** A JSON object typed into a textarea: `<field>: not valid JSON: …` when it does not parse. */
const jsonObject = z
  .string()
  .max(200_000)
  .transform((source, ctx) => {
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: `not valid JSON: ${error instanceof Error ? error.message : "it does not parse"}` });
      return z.NEVER;
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      ctx.addIssue({ code: "custom", message: "must be a JSON object" });
      return z.NEVER;
    }
    return value as Record<string, unknown>;
  });

/** Whether two texts are the same JSON, whatever their line endings and spacing. */
function sameJson(a: string, b: string): boolean {
  if (a.replace(/\r\n?/g, "\n").trim() === b.replace(/\r\n?/g, "\n").trim()) return true;
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
}

/**
 * A textarea's text when it differs from the text the page offered (sent as `<field>Original`),
 * else undefined: an unedited schema is left to the service, which derives it from the arguments bound.
 */
function edited(form: FormData, field: string): FormDataEntryValue | undefined {
  const sent = form.get(field);
  if (sent === null) return undefined;
  const original = form.get(`${field}Original`);
  return typeof sent === "string" && typeof original === "string" && sameJson(sent, original) ? undefined : sent;
}

// ---- Drafting ----

export type DraftSkillState = ActionResult<DraftedSkill> | null;

const draft = userAction(
  "skills:manage",
  z.strictObject({
    fingerprint: text(200),
    name: text(200),
    description: text(5_000),
    inputs: z
      .array(
        z.strictObject({
          hole: z
            .string()
            .regex(/^\d{1,5}$/, "must be a hole's number")
            .transform(Number),
          name: text(200),
        }),
      )
      .max(50),
    inputSchema: jsonObject.optional(),
    outputSchema: jsonObject.optional(),
  }),
  (actor, input) => draftSkill(prisma(), actor, input),
);

/** The draft form's fields: a bound hole's argument name is `argName-<hole>`. */
const DRAFT_FIELDS = [
  "fingerprint",
  "name",
  "description",
  "bind",
  /^argName-\d{1,5}$/,
  "inputSchema",
  "inputSchemaOriginal",
  "outputSchema",
  "outputSchemaOriginal",
];

export async function draftSkillAction(_previous: DraftSkillState, sent: FormData): Promise<DraftSkillState> {
  const read = actionForm(sent, DRAFT_FIELDS, ["bind"]);
  if (!read.ok) return read;
  const { form } = read;
  const inputs = form.getAll("bind").map((hole) => ({ hole, name: form.get(`argName-${String(hole)}`) ?? "" }));
  const result = await draft({
    fingerprint: form.get("fingerprint"),
    name: form.get("name"),
    description: form.get("description"),
    inputs,
    inputSchema: edited(form, "inputSchema"),
    outputSchema: edited(form, "outputSchema"),
  });
  if (!result.ok) return result;
  revalidatePath("/skills");
  redirect(`/skills/${result.data.versionId}`);
}

// ---- Replay and review ----

export type ReplayState = ActionResult<TestReport> | null;

const replay = userAction("skills:manage", z.strictObject({ versionId: z.uuid("versionId must be a skill version's id") }), async (actor, { versionId }) => {
  // The sandbox level, package allowlist and tool registry this process runs and analyses scripts with.
  const runtime = await appRuntime(prisma());
  await runtime.registry.refresh();
  return replaySkillTests(
    {
      db: prisma(),
      runScript: (request) => runInSandbox({ ...request, isolation: runtime.sandbox.level, packages: runtime.config.packages }),
      analyze: (code, language) => analyzeAgainst(runtime.registry, code, language).findings,
    },
    actor,
    versionId,
  );
});

export async function replaySkillAction(_previous: ReplayState, sent: FormData): Promise<ReplayState> {
  const read = actionForm(sent, ["versionId"]);
  if (!read.ok) return read;
  const { form } = read;
  const result = await replay({ versionId: form.get("versionId") });
  if (result.ok) revalidateSkills();
  return result;
}

export type ReviewSkillState = ActionResult<ReviewResult> | null;

const review = userAction(
  "skills:review",
  z.strictObject({ versionId: text(100), verdict: text(50), contentDigest: text(200), comment: text(5_000).optional() }),
  (actor, input) => reviewSkillVersion(prisma(), actor, input),
);

export async function reviewSkillAction(_previous: ReviewSkillState, sent: FormData): Promise<ReviewSkillState> {
  const read = actionForm(sent, ["versionId", "verdict", "contentDigest", "comment"]);
  if (!read.ok) return read;
  const { form } = read;
  const comment = form.get("comment");
  const result = await review({
    versionId: form.get("versionId"),
    verdict: form.get("verdict"),
    contentDigest: form.get("contentDigest"),
    comment: typeof comment === "string" && comment.trim() === "" ? undefined : (comment ?? undefined),
  });
  if (result.ok) revalidateSkills();
  return result;
}

// ---- Standing approvals ----

export type StandingState = ActionResult<{ id: string }> | null;

/** A datetime-local value ("2026-05-01T12:00"), read as UTC like every time the console shows. */
const LOCAL_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?$/;

const propose = userAction(
  "skills:manage",
  z.strictObject({
    skillVersionId: text(100),
    agents: text(20_000).transform((names) =>
      names
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean),
    ),
    bounds: jsonObject,
    notAfter: z
      .string()
      .regex(LOCAL_DATETIME, "must be a date and time (UTC)")
      .transform((value, ctx) => {
        const date = new Date(`${value}Z`);
        if (Number.isNaN(date.getTime())) {
          ctx.addIssue({ code: "custom", message: "must be a date and time (UTC)" });
          return z.NEVER;
        }
        return date;
      }),
    maxUses: z
      .string()
      .trim()
      .regex(/^\d{1,9}$/, "must be a whole number")
      .transform(Number),
    reason: text(5_000),
  }),
  (actor, input) => proposeStandingApproval(prisma(), actor, input),
);

const standingId = z.strictObject({ id: text(100) });
const confirm = userAction("skills:manage", standingId, (actor, input) => confirmStandingApproval(prisma(), actor, input));
const revoke = userAction("skills:manage", standingId, (actor, input) => revokeStandingApproval(prisma(), actor, input));

export async function proposeStandingAction(_previous: StandingState, sent: FormData): Promise<StandingState> {
  const fields = ["skillVersionId", "agents", "bounds", "notAfter", "maxUses", "reason"] as const;
  const read = actionForm(sent, fields);
  if (!read.ok) return read;
  const { form } = read;
  const result = await propose(Object.fromEntries(fields.map((field) => [field, form.get(field)])));
  if (result.ok) revalidateSkills();
  return result;
}

export async function confirmStandingAction(_previous: StandingState, sent: FormData): Promise<StandingState> {
  const read = actionForm(sent, ["id"]);
  if (!read.ok) return read;
  const result = await confirm({ id: read.form.get("id") });
  if (result.ok) revalidateSkills();
  return result;
}

export async function revokeStandingAction(_previous: StandingState, sent: FormData): Promise<StandingState> {
  const read = actionForm(sent, ["id"]);
  if (!read.ok) return read;
  const result = await revoke({ id: read.form.get("id") });
  if (result.ok) revalidateSkills();
  return result;
}

/** The list and every version page: a version's state shows on both. */
function revalidateSkills() {
  revalidatePath("/skills");
  revalidatePath("/skills/[id]", "page");
}
