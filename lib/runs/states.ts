/**
 * The run state machine's writers: `createRun`, which stores a new run where intake's steps take
 * it, and `transitionRun`, which moves a stored one. The table of allowed transitions is
 * lib/contracts/run-states.ts (docs/run-states.md publishes it, with the states later work adds).
 *
 * Guarantees:
 * - both refuse a transition outside the table before touching the database;
 * - `createRun` writes what `submitted` and then each step in turn would have written, in one
 *   insert, with the events of `run.submitted` and of every step, in order, in one statement: the
 *   log reads exactly as if each step had been its own update (no one else can see the run before
 *   its transaction commits, so there is nothing to race);
 * - a transition is a conditional update (`WHERE status IN from`), so of two racing writers exactly
 *   one moves the run and the other learns it lost (false), never a read-check-then-write;
 * - the audit event is written in the same transaction as the change, or the change fails; the
 *   event of a terminal state seals every tool call the run has on record (lib/audit/seal.ts),
 *   whoever ends it (executor, cancel, the maintenance sweep);
 * - the event carries, in `contentDigests`, the digests of the run's content columns its write sets
 *   (run.submitted: the submitted ones; a step or transition: javascript, limits, plan, result,
 *   error, execution), read back as stored; a terminal event digests all of the latter, written or
 *   not (lib/audit/run-content.ts);
 * - once the change commits, each transition is logged (lib/log.ts): one line, by the process that
 *   made it.
 * Nothing else in the codebase writes `Run.status`.
 */
import { recordAudit, recordAuditEvents, type AuditEventInput } from "@/lib/audit/record";
import { SUBMITTED_CONTENT, TRANSITION_CONTENT, contentDigests, type RunContentDigests, type RunContentField } from "@/lib/audit/run-content";
import { sealToolCalls } from "@/lib/audit/seal";
import type { Actor } from "@/lib/contracts/scopes";
import { afterCommit, type Tx } from "@/lib/db";
import { logRunChange, type RunChangeLine } from "@/lib/log";
import type { Prisma, Run } from "@/lib/generated/prisma/client";
import { canTransition, isTerminal, type RunStatus } from "@/lib/contracts/run-states";

export class IllegalTransition extends Error {
  constructor(from: readonly RunStatus[], to: RunStatus) {
    super(`run status cannot change from ${from.join(" or ")} to ${to}`);
    this.name = "IllegalTransition";
  }
}

export type Transition = {
  runId: string;
  /** The status (or statuses) the run must be in; checked in the update's WHERE clause. */
  from: RunStatus | readonly RunStatus[];
  to: RunStatus;
  /** Other columns written with the status. */
  data?: Omit<Prisma.RunUncheckedUpdateManyInput, "status" | "id">;
  /** Extra conditions of the update (e.g. a heartbeat cutoff). */
  where?: Omit<Prisma.RunWhereInput, "id" | "status">;
  /** The audit action; `run.<to>` unless given. */
  action?: string;
  audit?: Record<string, unknown>;
};

/**
 * Moves a run if it is still in `from`, writing the audit event in the same transaction.
 * Returns false when the run was not in `from` (someone else moved it first).
 */
export async function transitionRun(tx: Tx, actor: Actor, t: Transition): Promise<boolean> {
  return (await moveRun(tx, actor, t, false)) !== null;
}

/** transitionRun, returning the moved run's whole row as the update wrote it (RETURNING), or null. */
export async function transitionRunReturning(tx: Tx, actor: Actor, t: Transition): Promise<Run | null> {
  return moveRun(tx, actor, t, true);
}

/** The move; with `whole`, the row it wrote (else true), or null when the run was not in `from`. */
async function moveRun(tx: Tx, actor: Actor, t: Transition, whole: true): Promise<Run | null>;
async function moveRun(tx: Tx, actor: Actor, t: Transition, whole: false): Promise<true | null>;
async function moveRun(tx: Tx, actor: Actor, t: Transition, whole: boolean): Promise<Run | true | null> {
  const from: readonly RunStatus[] = typeof t.from === "string" ? [t.from] : t.from;
  if (from.length === 0 || !from.every((status) => canTransition(status, t.to))) throw new IllegalTransition(from, t.to);
  const digested = digestedFields(t.to, t.data);
  const where = { ...t.where, id: t.runId, status: { in: [...from] } };
  const written = { ...t.data, status: t.to };
  // What the caller wants back and the fields to digest come back with the update (RETURNING):
  // as stored, in one round trip.
  const select = Object.fromEntries(digested.map((field) => [field, true])) as Record<RunContentField, true>;
  let row: Partial<Run> | undefined;
  if (whole) [row] = await tx.run.updateManyAndReturn({ where, data: written });
  else if (digested.length > 0) [row] = await tx.run.updateManyAndReturn({ where, data: written, select });
  else row = (await tx.run.updateMany({ where, data: written })).count > 0 ? {} : undefined;
  if (!row) return null;
  const stored = digested.length > 0 ? contentDigests(row, digested) : null;
  const data = await eventData(tx, t.runId, t.to, t.audit, stored);
  await recordAudit(tx, { actor, action: t.action ?? `run.${t.to}`, subject: { type: "run", id: t.runId }, data });
  // Built now, so the hook holds ids and codes only, not the transition's content.
  const line: RunChangeLine = { runId: t.runId, from, to: t.to, actor, decision: loggedDecision(t), code: loggedCode(t) };
  afterCommit(() => logRunChange(line));
  return whole ? (row as Run) : true;
}

/** The content fields a write moving a run to `to` digests: all of them for a terminal state, else those it writes. */
function digestedFields(to: RunStatus, data: Partial<Record<RunContentField, unknown>> | undefined): readonly RunContentField[] {
  return isTerminal(to) ? TRANSITION_CONTENT : TRANSITION_CONTENT.filter((field) => data?.[field] !== undefined);
}

/** The data of the event of a move to `to`: its own, the seal of the run's tool calls for a terminal state, the content digests. */
async function eventData(tx: Tx, runId: string, to: RunStatus, audit: Record<string, unknown> | undefined, digests: RunContentDigests | null) {
  return {
    ...audit,
    ...(isTerminal(to) ? await sealToolCalls(tx, runId) : {}),
    ...(digests ? { contentDigests: digests } : {}),
  };
}

/** One of intake's steps after `submitted`: the status it moves to, the columns it writes, its event's data. */
export type CreationStep = {
  actor: Actor;
  to: RunStatus;
  data?: Partial<Omit<Prisma.RunUncheckedCreateInput, "status" | "id">>;
  audit?: Record<string, unknown>;
};

/**
 * Stores a new run as `submitted` followed by `steps`: one insert of the columns they write
 * together, at the last step's status, and the events run.submitted (`submitted.audit` with the
 * digests of the submitted content) and `run.<to>` of each step, staged in that order.
 */
export async function createRun(
  tx: Tx,
  submitted: { actor: Actor; data: Omit<Prisma.RunUncheckedCreateInput, "status">; audit: Record<string, unknown> },
  steps: readonly CreationStep[],
): Promise<Run> {
  let status: RunStatus = "submitted";
  for (const step of steps) {
    if (!canTransition(status, step.to)) throw new IllegalTransition([status], step.to);
    status = step.to;
  }
  const run = await tx.run.create({ data: Object.assign({}, submitted.data, ...steps.map((step) => step.data ?? {}), { status }) });
  const subject = { type: "run", id: run.id };
  const events: AuditEventInput[] = [
    { actor: submitted.actor, action: "run.submitted", subject, data: { ...submitted.audit, contentDigests: contentDigests(run, SUBMITTED_CONTENT) } },
  ];
  const lines: RunChangeLine[] = [];
  let from: RunStatus = "submitted";
  for (const step of steps) {
    const digested = digestedFields(step.to, step.data);
    const data = await eventData(tx, run.id, step.to, step.audit, digested.length > 0 ? contentDigests(run, digested) : null);
    events.push({ actor: step.actor, action: `run.${step.to}`, subject, data });
    lines.push({ runId: run.id, from: [from], to: step.to, actor: step.actor, decision: loggedDecision(step), code: loggedCode(step) });
    from = step.to;
  }
  await recordAuditEvents(tx, events);
  afterCommit(() => lines.forEach(logRunChange));
  return run;
}

/** The policy's decision, when this transition records it (intake's analyzed → …). */
function loggedDecision(t: Pick<Transition, "audit"> & { data?: { approvalsRequired?: unknown } }): RunChangeLine["decision"] {
  const decision = t.audit?.decision;
  if (typeof decision !== "string") return undefined;
  const reasons = Array.isArray(t.audit?.reasons) ? t.audit.reasons.filter((r): r is string => typeof r === "string") : [];
  const approvalsRequired = typeof t.data?.approvalsRequired === "number" ? t.data.approvalsRequired : null;
  return { decision, reasons, approvalsRequired };
}

function loggedCode(t: Pick<Transition, "audit">): string | null {
  return typeof t.audit?.errorCode === "string" ? t.audit.errorCode : null;
}
