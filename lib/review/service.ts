/**
 * Human review of escalated runs: a person decides what policy escalated, bound to what they saw.
 *
 * decideRun guarantees:
 * - only a person holding `runs:review` decides, and only where the policy's reviewer role (if
 *   any) is theirs; nobody decides a run of an agent they own (separation of duties); one vote per
 *   person; only while the run waits for review and its deadline has not passed. These rules are
 *   ./decision-rules.ts decisionBlocker, evaluated on the locked row, so the refusal's words and
 *   `details` are the ones the run page shows;
 * - the input is parsed with a closed schema; a comment is required to reject or request changes;
 * - the decision is bound to what the reviewer saw: code sha256, capability set, inputs digest and
 *   policy version are sent back with it and compared with the run row on the server; any
 *   difference is refused (conflict, naming the fields) — approval evidence never comes from the
 *   client alone;
 * - race-free: the run row is locked (`SELECT … FOR UPDATE`) and every state change is a
 *   conditional update (`WHERE status = 'pending_review'`) in the same transaction as the Review
 *   row (unique per reviewer, so one vote per person) and the audit events. Of two simultaneous
 *   final approvals exactly one queues the run; the other is told it was already decided;
 * - the `run.reviewed` event carries the verdict, the comment and the reviewer's name and email,
 *   so a run's evidence file proves them from the chain (lib/audit/evidence.ts);
 * - quorum: the run is `approved` and `queued` only when the distinct approvals reach
 *   `approvalsRequired`; reject → `rejected`, request changes → `changes_requested` (terminal);
 * - after the commit, the one transaction that queued the run hands it to the executor, once,
 *   through the `startExecution` its caller passes in (this module does not reach the runtime).
 *
 * Expiring pending reviews is lib/runs/expiry.ts. Notifications (lib/runs/notify.ts) are sent
 * after commit and never change the outcome.
 */
import { runColumn } from "@/lib/contracts/run-columns";
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import { afterCommit, type Db, type Tx } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { logReviewVote } from "@/lib/log";
import type { Run } from "@/lib/generated/prisma/client";
import type { RunDeps } from "@/lib/runs/service";
import { transitionRun } from "@/lib/runs/states";
import { RUN_ID, contextOf, inSpan } from "@/lib/tracing";
import { storableString } from "@/lib/untrusted/storable-schema";
import type { DecisionBinding } from "./run-dto";
import { decisionBlocker, decisionRefusal } from "./decision-rules";
import { notifyDecision } from "@/lib/runs/notify";

export const VERDICTS = ["approve", "reject", "request_changes"] as const;
export type Verdict = (typeof VERDICTS)[number];

/** The facts an approval is bound to, as the reviewer's page showed them. */
export const seenSchema = z
  .object({
    codeSha256: z.string().regex(/^[0-9a-f]{64}$/, "codeSha256 must be a sha256 hex digest"),
    capabilitySet: z.array(z.string().min(1).max(300)).max(1_000),
    inputsDigest: z.string().regex(/^[0-9a-f]{64}$/, "inputsDigest must be a sha256 hex digest"),
    policyVersionId: z.uuid().nullable(),
    /** The digest of the plan the page showed (lib/runs/preview.ts); null for a run without one. */
    planDigest: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "planDigest must be a sha256 hex digest")
      .nullable()
      .default(null),
  })
  .strict();

export type SeenFacts = z.infer<typeof seenSchema>;

export const decisionSchema = z
  .object({
    runId: z.uuid("runId must be a run id"),
    verdict: z.enum(VERDICTS),
    comment: storableString()
      .trim()
      .max(5_000, "comment is limited to 5000 characters")
      .optional()
      .transform((value) => (value ? value : undefined)),
    seen: seenSchema,
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.verdict !== "approve" && !value.comment) {
      ctx.addIssue({ code: "custom", path: ["comment"], message: "A comment is required to reject or request changes; the agent reads it." });
    }
  });

export type DecisionInput = z.input<typeof decisionSchema>;

const STATUS_BY_VERDICT = { approve: "approved", reject: "rejected", request_changes: "changes_requested" } as const satisfies Record<Verdict, Run["status"]>;

export type DecisionResult = {
  runId: string;
  status: Run["status"];
  verdict: Verdict;
  approvals: { received: number; required: number; by: string[] };
};

export type ReviewDeps = {
  db: Db;
  /** Hands a queued run to the executor (the runtime's startExecution); called at most once per decision, after commit. */
  startExecution: RunDeps["startExecution"];
};

function parseDecision(raw: unknown) {
  const parsed = decisionSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.join(".");
    throw new AppError("bad_request", path && !issue?.message.startsWith("A comment") ? `${path}: ${issue?.message}` : (issue?.message ?? "invalid decision"), {
      details: { field: path || null },
    });
  }
  return parsed.data;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((value, i) => value === y[i]);
}

type BoundFacts = Pick<Run, "id" | "codeSha256" | "capabilitySet" | "inputsDigest" | "policyVersionId" | "plan">;

/** The facts an approval of the run as it is now is bound to: what the run page sends back as `seen`. */
export function reviewBinding(run: BoundFacts): DecisionBinding {
  return {
    codeSha256: run.codeSha256,
    capabilitySet: runColumn(run, "capabilitySet") ?? [],
    inputsDigest: run.inputsDigest,
    policyVersionId: run.policyVersionId ?? null,
    planDigest: runColumn(run, "plan")?.digest ?? null,
  };
}

/** The fields of `seen` that no longer match the run (empty when the binding holds). */
export function bindingChanges(run: BoundFacts, seen: SeenFacts): string[] {
  const changed: string[] = [];
  if (run.codeSha256 !== seen.codeSha256) changed.push("codeSha256");
  if (!sameSet(runColumn(run, "capabilitySet") ?? [], seen.capabilitySet)) changed.push("capabilitySet");
  if (run.inputsDigest !== seen.inputsDigest) changed.push("inputsDigest");
  if ((run.policyVersionId ?? null) !== seen.policyVersionId) changed.push("policyVersionId");
  if ((runColumn(run, "plan")?.digest ?? null) !== seen.planDigest) changed.push("planDigest");
  return changed;
}

/** The run, locked for this transaction, with its agent and this reviewer's vote (if any). */
async function lockRun(tx: Tx, runId: string, reviewerId: string) {
  await tx.$queryRaw`SELECT id FROM "Run" WHERE id = ${runId}::uuid FOR UPDATE`;
  const run = await tx.run.findUnique({
    where: { id: runId },
    include: { agent: { select: { ownerId: true, name: true } }, reviews: { where: { reviewerId }, select: { reviewerId: true, verdict: true } } },
  });
  if (!run) return null;
  return { ...run, submittedBy: await submitterOf(tx, runId) };
}

/**
 * The person who submitted a run for its agent through another door (`exec --as`), named only in
 * its run.submitted event (chained or still staged); null for the agent's own submissions. Read
 * in the caller's locked transaction without the sequencing hook, which would take a second
 * connection while this one holds the run.
 */
export async function submitterOf(tx: Tx, runId: string): Promise<string | null> {
  const [row] = await tx.$queryRaw<{ via: { type?: unknown; id?: unknown } | null }[]>`
    SELECT data -> 'via' AS via FROM (
      SELECT data FROM "AuditEvent" WHERE "subjectType" = 'run' AND "subjectId" = ${runId} AND action = 'run.submitted'
      UNION ALL
      SELECT data FROM "AuditPending" WHERE "subjectType" = 'run' AND "subjectId" = ${runId} AND action = 'run.submitted'
    ) submitted LIMIT 1`;
  const via = row?.via;
  return via?.type === "user" && typeof via.id === "string" ? via.id : null;
}

/** Moves a run between two states only if it is still in the first; a miss means someone else decided. */
async function transition(
  tx: Tx,
  actor: Actor,
  runId: string,
  from: Run["status"],
  to: Run["status"],
  audit: Record<string, unknown> = {},
  data: { finishedAt?: Date } = {},
) {
  if (!(await transitionRun(tx, actor, { runId, from, to, data, audit }))) {
    throw new AppError("conflict", `Run ${runId} is no longer ${from.replaceAll("_", " ")}; it was decided by someone else.`);
  }
}

export async function decideRun({ db, startExecution }: ReviewDeps, actor: Actor, raw: unknown): Promise<DecisionResult> {
  // The actor's part of decisionBlocker, before anything is read: requireScope's words, and a person.
  requireScope(actor, "runs:review");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can review a run.");
  const input = parseDecision(raw);
  const { runId, verdict } = input;
  // A review joins the trace its run was submitted in, however long ago (lib/tracing.ts).
  const traced = await db.run.findUnique({ where: { id: runId }, select: { traceparent: true } });
  return inSpan("airlock.review", contextOf(traced?.traceparent), { [RUN_ID]: runId, "airlock.verdict": verdict }, async (span) => {
    const result = await recordDecision({ db, startExecution }, actor, input);
    span.setAttribute("airlock.status", result.status);
    return result;
  });
}

async function recordDecision(
  { db, startExecution }: ReviewDeps,
  actor: Actor & { type: "user" },
  { runId, verdict, comment, seen }: ReturnType<typeof parseDecision>,
): Promise<DecisionResult> {
  const result = await db.$transaction(
    async (tx) => {
      const run = await lockRun(tx, runId, actor.id);
      if (!run) throw new AppError("not_found", `No run ${runId}.`);
      const blocker = decisionBlocker(run, actor);
      if (blocker) throw decisionRefusal(blocker, run);
      const changed = bindingChanges(run, seen);
      if (changed.length > 0) {
        throw new AppError("conflict", `The run changed since you opened it (${changed.join(", ")}); reload the page and review it again.`, {
          details: { changed },
        });
      }
      await tx.review.create({ data: { runId, reviewerId: actor.id, verdict, comment: comment ?? null } });
      const approvers = await tx.review.findMany({
        where: { runId, verdict: "approve" },
        orderBy: { createdAt: "asc" },
        select: { reviewer: { select: { email: true } } },
      });
      const approvals = { received: approvers.length, required: Math.max(1, run.approvalsRequired), by: approvers.map((r) => r.reviewer.email) };
      const subject = { type: "run", id: runId };
      // Who decided, by name and email as they are now: a run's evidence names reviewers from here (lib/audit/evidence.ts).
      const reviewer = await tx.user.findUniqueOrThrow({ where: { id: actor.id }, select: { name: true, email: true } });
      await recordAudit(tx, {
        actor,
        action: "run.reviewed",
        subject,
        data: { verdict, comment: comment ?? null, reviewer, approvals: approvals.received, approvalsRequired: approvals.required, seen },
      });
      afterCommit(() =>
        logReviewVote({ runId, reviewerId: actor.id, reviewerEmail: reviewer.email, verdict, received: approvals.received, required: approvals.required }),
      );

      if (verdict !== "approve") {
        await transition(tx, actor, runId, "pending_review", STATUS_BY_VERDICT[verdict], { verdict, comment }, { finishedAt: new Date() });
        return { runId, status: STATUS_BY_VERDICT[verdict], verdict, approvals } satisfies DecisionResult;
      }
      if (approvals.received < approvals.required) {
        return { runId, status: "pending_review" as const, verdict, approvals } satisfies DecisionResult;
      }
      await transition(tx, actor, runId, "pending_review", "approved", { approvedBy: approvals.by, approvalsRequired: approvals.required, binding: seen });
      await transition(tx, { type: "system", name: "runs" }, runId, "approved", "queued");
      return { runId, status: "queued" as const, verdict, approvals } satisfies DecisionResult;
    },
    { timeout: 15_000, maxWait: 10_000 },
  );

  if (result.status === "queued") {
    // Exactly one transaction moved this run to `queued`; only it starts the execution.
    startExecution(runId);
  }
  void notifyDecision(db, result);
  return result;
}
