/**
 * submit_run: the one service function behind every door that submits a proposal (the MCP tool
 * and task, the tests' harnesses). Intake validates, analyses, asks policy and stores the run.
 *
 * Guarantees:
 * - the body is validated with a closed schema; oversize code is refused with the limit named;
 * - the same idempotency key with the same body returns the same run; with a different body it is
 *   a conflict. The key is looked up again under the agent's lock before the run is stored, so of
 *   racing submits one stores the run and every other gets it back or a conflict, never a run of
 *   another body;
 * - agent text (code, purpose, provenance, idempotencyKey, inputs) holding U+0000 or a lone
 *   surrogate is refused naming the field, never repaired (PostgreSQL cannot store either); code
 *   (call_tool's and run_skill's arguments included) or a purpose holding a credential is refused
 *   naming its kind, and one in the provenance is redacted (./credentials.ts);
 * - provenance (model, conversation id, prompt, the context the agent selected) is optional and
 *   capped in UTF-8 bytes (prompt 32 KiB, context 64 KiB), refused naming the field; policy sees
 *   only whether each is there (lib/policy/request.ts);
 * - a refused submission leaves a `run.refused` audit event; a stored one `run.submitted`, carrying
 *   the digests of the code, language, purpose, provenance and inputs as stored
 *   (lib/audit/run-content.ts), the model and conversation id, the prompt's and context's own
 *   sha256 and size, and the door it came through when it is not the agent's (`via`);
 * - budgets (runs per hour, concurrent runs, sandbox CPU-seconds per day, runs waiting for review)
 *   and the loop breaker (the same code failing N times in a window) refuse with BUDGET_EXCEEDED;
 *   they are checked before any work is done and again under a per-agent lock in the transaction
 *   that stores the run, so parallel submissions cannot overrun them. CPU-seconds count what runs
 *   that finished in the last day used plus the whole CPU limit of every run approved and not yet
 *   finished, this one included; the cap on runs waiting for review applies to a run that would
 *   escalate;
 * - analysis and policy see only server-side facts (the tool registry, dataset classes), never the
 *   agent's claims; the decision, its reasons, the policy version and the Cedar request are stored
 *   with the run, with the limits it is decided on (lib/runs/limits.ts), and the run is stored
 *   where intake's steps take it by createRun (lib/runs/states.ts), one insert with every step's
 *   event;
 * - an allowed run is queued in that transaction and handed to the executor afterwards; in a
 *   process with an idle executor slot it is also claimed there (lib/runs/queue.ts LocalStart):
 *   its fair-share slot taken and its move to `running` written with the rest, or, at its agent's
 *   share, left queued waiting for a slot; a slot reserved and not used goes back. An escalated
 *   run is announced to the review webhook, if configured (never with code or data);
 * - every stored run carries its structural fingerprint (lib/script-fingerprint.ts), which
 *   patterns group runs by;
 * - the same pipeline serves the direct lane (./direct.ts, `Lane`): a direct call is decided on
 *   Action::"call", stored with kind `direct`, and refused (USE_SUBMIT_RUN) where a script would
 *   wait for reviewers;
 * - and skills (lib/skills): a script's `skills.<name>(…)` calls are inlined before analysis, so
 *   what is analysed, decided, stored and run covers them (`Run.skills` names the versions); a
 *   run_skill call (./skill.ts) policy escalates is approved by a standing approval that covers
 *   it, used in the transaction that stores the run (pending_review → approved → queued, no
 *   preview), or else waits for reviewers like any run.
 */
import { randomUUID } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { hasScope, requireScope, type Actor } from "@/lib/contracts/scopes";
import { canonicalJson } from "@/lib/canonical-json";
import type { DataClass } from "@/lib/contracts/data-classes";
import { runColumnValue, type RunColumnValue } from "@/lib/contracts/run-columns";
import type { Db, Tx } from "@/lib/db";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { env } from "@/lib/env";
import { AppError, invalidArguments, isAppError, type AppErrorCode } from "@/lib/errors";
import type { Run } from "@/lib/generated/prisma/client";
import { analyzeAgainst } from "@/lib/intake/analyze";
import { redactedProvenance, refuseCredentials, type CodeOrigin } from "@/lib/intake/credentials";
import { SkillUseError, inlineSkills, mentionsSkills, type SkillRef } from "@/lib/skills/catalog";
import { publishedSkills } from "@/lib/skills/service";
import { claimStandingApproval } from "@/lib/skills/standing";
import { ROOT_CONTEXT, RUN_ID, contextWith, inSpan, inSpanSync, traceparentOf } from "@/lib/tracing";
import { BUILTIN_REASONS, decide, type PolicyDecision } from "@/lib/policy/decide";
import { buildPolicyRequest, provenancePresence } from "@/lib/policy/request";
import { publishedPolicy } from "@/lib/policy/store";
import { notifyEscalation } from "@/lib/runs/notify";
import { decideRunLimits } from "@/lib/runs/limits";
import { presentRun, previewHeldFromAgent, watchRun, type AgentActor, type Follow, type RunDeps, type RunView } from "@/lib/runs/service";
import { createRun, type CreationStep } from "@/lib/runs/states";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import { redactSecrets } from "@/lib/untrusted/secrets";
import { findUnstorable, normalizeText, unstorableRefusal } from "@/lib/untrusted/storable-text";

/** Caps of the provenance texts, in UTF-8 bytes (the schemas' maxLength, in characters, is the same number: a bound never tighter). */
export const PROVENANCE_BYTE_CAPS = { prompt: 32 * 1024, context: 64 * 1024 } as const;

const provenanceSchema = z
  .object({
    model: z.string().max(200).optional(),
    conversationId: z.string().max(200).optional(),
    prompt: z.string().max(PROVENANCE_BYTE_CAPS.prompt).optional(),
    context: z.string().max(PROVENANCE_BYTE_CAPS.context).optional(),
  })
  .strict();

/** Line breaks, C0 and C1 controls (a tab aside), and bidi marks, embeddings, overrides and isolates. */
const PURPOSE_REFUSED = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

export const submitRunSchema = z
  .object({
    code: z
      .string()
      .min(1, "code is empty")
      .refine((code) => code.trim() !== "", "code is empty"),
    // One line reviewers read as written: no line breaks, controls or bidi characters that could reorder it.
    purpose: z
      .string()
      .trim()
      .min(1, "purpose is required")
      .max(2_000)
      .refine((purpose) => !PURPOSE_REFUSED.test(purpose), "must be one line of plain text: no line breaks, control or bidi characters"),
    language: z.enum(["typescript", "javascript"]).default("typescript"),
    inputs: z.array(z.string().min(1).max(128)).max(20).default([]),
    idempotencyKey: z.string().min(1).max(200).optional(),
    provenance: provenanceSchema.default({}),
  })
  .strict();

export type SubmitRunInput = z.input<typeof submitRunSchema>;

export class BudgetExceeded extends AppError {
  readonly runCode = "BUDGET_EXCEEDED" as const;
  constructor(message: string, next?: string) {
    super("rate_limited", message, { next });
  }
}

/** A direct call (call_tool) that the direct lane does not make: it belongs in a script (lib/intake/direct.ts). */
export class DirectCallRefused extends AppError {
  readonly runCode = "USE_SUBMIT_RUN" as const;
  /** `instead`: what the agent can do (its `next` too); by default, make the call from a script (USE_SUBMIT_RUN's rule). */
  constructor(message: string, details?: Record<string, unknown>, instead?: string) {
    super("conflict", `${message} Nothing was called. ${instead ?? "Write a script that makes the call and submit it with submit_run."}`, {
      details,
      ...(instead ? { next: instead } : {}),
    });
  }
}

/**
 * How a proposal is decided and executed: a script (submit_run), one direct call (call_tool,
 * ./direct.ts), or one skill call (run_skill, ./skill.ts: `skill`, which a standing approval may
 * cover where policy escalates). `skills`: the skill versions a script calls, inlined into it.
 */
export type Lane = {
  kind: "script" | "direct";
  action: "run" | "call";
  skill?: { versionId: string; name: string; version: number; arguments: Record<string, unknown> };
  skills?: SkillRef[];
};
const SCRIPT_LANE: Lane = { kind: "script", action: "run" };

/**
 * Validates a submission. `scanned` is the text searched for credentials: the agent's code by
 * default; for call_tool and run_skill their arguments, as JSON (the rest of their script is
 * Airlock's or a reviewed skill's); for a script with skills inlined, the agent's own code.
 */
export function parseSubmit(raw: unknown, scanned?: { text: string; origin: CodeOrigin }) {
  const maxBytes = env().AIRLOCK_MAX_CODE_BYTES;
  if (raw && typeof raw === "object" && typeof (raw as { code?: unknown }).code === "string") {
    const size = Buffer.byteLength((raw as { code: string }).code, "utf8");
    if (size > maxBytes) {
      throw new AppError("payload_too_large", `code is ${size} bytes; the limit is ${maxBytes} bytes. Split the work or move data into inputs.`);
    }
  }
  const parsed = submitRunSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  // Refused, never repaired: what the agent sent is what reviewers see and what is hashed.
  for (const [field, value] of Object.entries(parsed.data)) {
    const bad = findUnstorable(value, field);
    if (bad) throw unstorableRefusal(bad);
  }
  refuseCredentials({ ...parsed.data, scanned: scanned ?? { text: parsed.data.code, origin: "code" } });
  // The provenance as stored: a credential in it redacted, then capped (a redaction can be longer than what it replaces).
  const provenance = redactedProvenance(parsed.data.provenance);
  for (const field of ["prompt", "context"] as const) {
    const bytes = Buffer.byteLength(provenance[field] ?? "", "utf8");
    const cap = PROVENANCE_BYTE_CAPS[field];
    if (bytes > cap) {
      throw new AppError("bad_request", `provenance.${field}: ${bytes} bytes; the limit is ${cap} bytes (${cap / 1024} KiB) in UTF-8.`, {
        details: { field: `provenance.${field}`, bytes, limit: cap },
      });
    }
  }
  return { ...parsed.data, provenance };
}

/** Statuses of a run that is approved and not finished: it counts against the concurrency budget and reserves its CPU limit. */
// A run in its plan preview counts against the cap on runs waiting for review (and runs per hour), not here.
const IN_FLIGHT = ["auto_approved", "approved", "queued", "running"] as const;

/** What the run being submitted would add: its CPU limit, and whether it would wait for review (unknown before policy decides). */
type Proposed = { cpuSeconds: number; escalates: boolean };

/** Statuses waiting for reviewers: the budget of pending reviews. */
const PENDING = ["previewing", "pending_review", "pending_release"] as const;
/** Endings the loop breaker counts for the same script. */
const FAILED = ["denied", "failed", "timed_out", "check_failed", "withheld", "rejected", "changes_requested"] as const;

type BudgetFigures = { lastHour: number; active: number; pending: number; failures: number; usedMs: number; reservedMs: number };

/**
 * The statuses of a run not finished: the predicate of the partial index "Run_agentId_open_idx"
 * (migration 20261203142757_budget_figures_by_index), which airlock_budget_figures' WHERE spells out
 * so that the planner uses it (bench/history.ts explains that WHERE with this list).
 */
export const OPEN_RUN_STATUSES = [...IN_FLIGHT, ...PENDING] as const;

/**
 * Every figure the budgets need, in one statement over the agent's runs (the database function
 * airlock_budget_figures, migration 20261205221743_budget_figures_under_lock). With `lock`, inside
 * intake's transaction, the agent's budget lock is taken first in the same round trip, and the
 * figures are read once it is held. The three parts of its WHERE (created in the window, not
 * finished, finished in the last day) are each served by an index, so the statement reads those
 * runs and not the agent's whole history.
 */
async function budgetFigures(db: Db | Tx, agentId: string, codeSha256: string, lock: boolean): Promise<BudgetFigures> {
  const hourAgo = new Date(Date.now() - 3_600_000);
  const loopWindowStart = new Date(Date.now() - env().AIRLOCK_LOOP_BREAKER_WINDOW_MINUTES * 60_000);
  const [figures] = await db.$queryRaw<BudgetFigures[]>`
    SELECT * FROM "airlock_budget_figures"(${agentId}::uuid, ${lock}, ${codeSha256}, ${hourAgo}::timestamptz, ${loopWindowStart}::timestamptz,
      ${[...IN_FLIGHT]}::text[], ${[...PENDING]}::text[], ${[...FAILED]}::text[], ${RUN_LIMIT_DEFAULTS.cpuSeconds}::numeric)`;
  return figures!;
}

/** Refuses with BudgetExceeded when the proposed run would overrun a budget; with `lock` (in a transaction), under the agent's budget lock. */
async function enforceBudgets(db: Db | Tx, agentId: string, codeSha256: string, proposed: Proposed, lock = false): Promise<void> {
  const config = env();
  const { lastHour, active, pending, failures, usedMs, reservedMs } = await budgetFigures(db, agentId, codeSha256, lock);
  if (lastHour >= config.AIRLOCK_BUDGET_RUNS_PER_HOUR) {
    throw new BudgetExceeded(`This agent submitted ${lastHour} runs in the last hour; the budget is ${config.AIRLOCK_BUDGET_RUNS_PER_HOUR}.`);
  }
  if (active >= config.AIRLOCK_BUDGET_CONCURRENT_RUNS) {
    throw new BudgetExceeded(`This agent has ${active} runs queued or running; the budget is ${config.AIRLOCK_BUDGET_CONCURRENT_RUNS} at once.`);
  }
  if (proposed.escalates && pending >= config.AIRLOCK_BUDGET_PENDING_REVIEWS) {
    throw new BudgetExceeded(
      `This agent has ${pending} runs waiting for review or for the release of their result; the budget is ${config.AIRLOCK_BUDGET_PENDING_REVIEWS}. Wait for reviewers to decide, or cancel some of them.`,
    );
  }
  if (failures >= config.AIRLOCK_LOOP_BREAKER_FAILURES) {
    throw new BudgetExceeded(
      `This exact script failed or was refused ${failures} times in the last ${config.AIRLOCK_LOOP_BREAKER_WINDOW_MINUTES} minutes; change the approach instead of resubmitting it.`,
      "Do not submit this script again: read why its runs failed (get_run on one of them), change the script or the approach, or tell the user what blocks it.",
    );
  }
  const used = usedMs / 1000;
  const reserved = reservedMs / 1000;
  if (used + reserved + proposed.cpuSeconds > config.AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY) {
    throw new BudgetExceeded(
      `This agent used ${Math.round(used)} sandbox CPU-seconds today and its runs not finished yet may use ${Math.round(reserved)} more; ` +
        `this run may use up to ${proposed.cpuSeconds}, and the budget is ${config.AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY} a day.`,
    );
  }
}

const STATUS_BY_DECISION = { allow: "auto_approved", escalate: "pending_review", deny: "denied" } as const;

/** A door other than the agent's own (the CLI's `exec --agent`) and who used it, recorded in run.submitted. */
export type SubmitOptions = {
  via?: { door: string; by: Actor };
  /**
   * Answer with the run as it settles instead of as stored: a queued run or a plan preview, for an
   * agent that may read runs, is waited for (up to `seconds`, through getRun); one whose token holds runs:submit
   * alone gets the run as submitted (its id and status), never an error after the run was stored.
   */
  wait?: { seconds: number; signal?: AbortSignal };
  /** How the agent can follow the run, for the answer's `next` hint (lib/runs/service.ts Follow); get_run by default. */
  follow?: Follow;
};

const actorRef = (actor: Actor) =>
  actor.type === "system" ? { type: actor.type, name: actor.name } : { type: actor.type, id: actor.id, ...("email" in actor ? { email: actor.email } : {}) };

/**
 * What run.submitted carries of the provenance besides the column's digest: the model and
 * conversation id as given, and each long text (prompt, selected context) as its sha256 and size,
 * so each is sealed on its own and can be checked without the others.
 */
function provenanceSeal(provenance: { model?: string; conversationId?: string; prompt?: string; context?: string }) {
  const sealed = (text: string | undefined) => (text === undefined ? null : { sha256: sha256Hex(text), bytes: Buffer.byteLength(text, "utf8") });
  return {
    model: provenance.model ?? null,
    conversationId: provenance.conversationId ?? null,
    prompt: sealed(provenance.prompt),
    context: sealed(provenance.context),
  };
}

/**
 * Submits a proposal. A refused submission (malformed, too large, over budget, an idempotency
 * conflict) leaves a `run.refused` event naming the agent and the reason, then the error is thrown.
 */
export async function submitRun(deps: RunDeps, actor: AgentActor, raw: unknown, options: SubmitOptions = {}): Promise<RunView> {
  return recordingRefusals(deps.db, actor, raw, async () => {
    requireScope(actor, "runs:submit");
    const input = parseSubmit(raw);
    if (!mentionsSkills(input.code)) return submitProposal(deps, actor, input, options, SCRIPT_LANE);
    const inlined = await withSkillsInlined(deps, input);
    return submitProposal(deps, actor, inlined.input, options, { ...SCRIPT_LANE, skills: inlined.used });
  });
}

/** The script with the skills it calls inlined (lib/skills/catalog.ts), checked again as a submission: it is what runs. */
async function withSkillsInlined({ db, remembered }: RunDeps, input: ReturnType<typeof parseSubmit>) {
  const skills = new Map((await publishedSkills(db, remembered)).map((s) => [s.name, s]));
  try {
    const { code, used } = inlineSkills(input.code, input.language, skills);
    return { input: parseSubmit({ ...input, code }, { text: input.code, origin: "code" }), used };
  } catch (error) {
    if (error instanceof SkillUseError) throw new AppError("bad_request", `code: ${error.message}`, { details: { field: "code" } });
    throw error;
  }
}

/** Runs `submit`; a refusal it throws is recorded as `run.refused` (naming `raw`'s code, if any) and thrown again. */
export async function recordingRefusals(db: Db, actor: AgentActor, raw: unknown, submit: () => Promise<RunView>): Promise<RunView> {
  try {
    return await submit();
  } catch (error) {
    if (isAppError(error) && REFUSALS_RECORDED.has(error.code)) await recordRefusal(db, actor, raw, error);
    throw error;
  }
}

const REFUSALS_RECORDED = new Set<AppErrorCode>(["bad_request", "payload_too_large", "rate_limited", "conflict"]);

async function recordRefusal(db: Db, actor: AgentActor, raw: unknown, error: AppError): Promise<void> {
  const code = typeof (raw as { code?: unknown } | null)?.code === "string" ? (raw as { code: string }).code : null;
  await db
    .$transaction((tx) =>
      recordAudit(tx, {
        actor,
        action: "run.refused",
        subject: { type: "agent", id: actor.id },
        data: {
          reason: error instanceof BudgetExceeded || error instanceof DirectCallRefused ? error.runCode : error.code,
          // Refusals may quote what the agent sent (an unknown input's name, an unknown key): a credential in it is not kept.
          message: redactSecrets(normalizeText(error.message).value).text.slice(0, 500),
          codeSha256: code === null ? null : sha256Hex(code),
          codeBytes: code === null ? null : Buffer.byteLength(code, "utf8"),
        },
      }),
    )
    .catch((auditError: unknown) => console.error("recording a refused submission failed", auditError));
}

/** Parsed, by the caller's door (submitRun, or submitDirectCall in ./direct.ts), whose scope was checked. */
export async function submitProposal(
  deps: RunDeps,
  actor: AgentActor,
  input: ReturnType<typeof parseSubmit>,
  options: SubmitOptions,
  lane: Lane,
): Promise<RunView> {
  // The run's id is chosen here, so that every span of its trace names it from the first (lib/tracing.ts).
  const runId = randomUUID();
  // Armed before the run is stored, so the answer's wait needs no first read and misses no change.
  const waits = options.wait !== undefined && hasScope(actor, "runs:read");
  const armed = waits ? deps.changes?.arm(runId) : undefined;
  let run: Run;
  try {
    // A new trace per run: a traceparent the agent sends chooses neither its trace nor its sampling.
    run = await inSpan("airlock.submit", ROOT_CONTEXT, { [RUN_ID]: runId, "airlock.agent_id": actor.id, "airlock.kind": lane.kind }, (span) =>
      storeProposal(deps, actor, input, options, lane, runId, span),
    );
  } catch (error) {
    armed?.cancel();
    throw error;
  }
  // The stored run's view, or, when the caller asked to wait and may, the view once it settles
  // (SubmitOptions.wait). An idempotent replay is another run than the one the wait was armed for.
  // A plan preview takes a moment too: the answer carries the plan (or why the preview failed), so
  // the agent does not start a wait for what is already there; unless the preview's outcome is
  // shown only after its time limit (regulated reads), which no short wait reaches.
  const previewShownSoon = run.status === "previewing" && !previewHeldFromAgent(run);
  if (waits && (run.status === "queued" || run.status === "running" || previewShownSoon)) {
    const first = run.id === runId ? { run, armed } : undefined;
    if (!first) armed?.cancel();
    return watchRun(deps, actor, run.id, options.wait!.seconds, options.wait!.signal, first, options.follow);
  }
  armed?.cancel();
  return presentRun(deps.db, run, options.follow);
}

async function storeProposal(
  deps: RunDeps,
  actor: AgentActor,
  input: ReturnType<typeof parseSubmit>,
  options: SubmitOptions,
  lane: Lane,
  runId: string,
  span: Span,
): Promise<Run> {
  const { db } = deps;
  const requestDigest = sha256Hex(canonicalJson(input));
  const codeSha256 = sha256Hex(input.code);

  if (input.idempotencyKey) {
    const existing = await db.run.findUnique({ where: { agentId_idempotencyKey: { agentId: actor.id, idempotencyKey: input.idempotencyKey } } });
    if (existing) {
      span.setAttribute(RUN_ID, existing.id);
      return sameRequest(existing, requestDigest);
    }
  }
  // Independent reads, at once; a refusal among them is the one they would give one by one:
  // budgets first, then the inputs (the scope to read them, then their names). The registry is
  // refreshed so an override two admins confirmed in another process decides here too.
  const [, datasets, , policy] = await allInOrder([
    enforceBudgets(db, actor.id, codeSha256, { cpuSeconds: RUN_LIMIT_DEFAULTS.cpuSeconds, escalates: false }),
    input.inputs.length === 0
      ? Promise.resolve([])
      : Promise.resolve().then(() => {
          requireScope(actor, "inputs:read");
          return db.dataset.findMany({ where: { name: { in: input.inputs } }, select: { id: true, name: true, sha256: true, dataClass: true } });
        }),
    deps.registry.refresh(),
    publishedPolicy(db, deps.remembered),
  ] as const);
  const missing = input.inputs.filter((name) => !datasets.some((d) => d.name === name));
  if (missing.length > 0) {
    throw new AppError("bad_request", `Unknown input ${missing.map((m) => JSON.stringify(m)).join(", ")}; list_inputs shows the datasets you may pass.`);
  }
  const inputs = input.inputs.map((name) => {
    const d = datasets.find((x) => x.name === name)!;
    return { name, datasetId: d.id, sha256: d.sha256, dataClass: d.dataClass };
  });
  const inputsDigest = sha256Hex(canonicalJson(inputs.map(({ name, sha256: digest }) => ({ name, sha256: digest }))));

  const analysis = inSpanSync("airlock.analysis", contextWith(span), { [RUN_ID]: runId }, () => analyzeAgainst(deps.registry, input.code, input.language));
  const policyRequest = buildPolicyRequest({
    agent: { id: actor.id, ownerId: actor.ownerId },
    facts: analysis.facts,
    findings: analysis.findings,
    capabilitySet: analysis.capabilitySet,
    inputDataClasses: [...new Set(inputs.map((i) => i.dataClass as DataClass))],
    limits: RUN_LIMIT_DEFAULTS,
    isolation: deps.isolation,
    provenance: provenancePresence(input.provenance),
    action: lane.action,
  });
  const decision: PolicyDecision = policy
    ? inSpanSync("airlock.decision", contextWith(span), { [RUN_ID]: runId }, (decisionSpan) => {
        const decided = decide(policyRequest, policy.prepared);
        decisionSpan.setAttribute("airlock.decision", decided.decision);
        return decided;
      })
    : {
        decision: "deny",
        approvalsRequired: 0,
        reasons: [{ policyId: BUILTIN_REASONS.defaultDeny, text: "No policy version is published, so nothing may run.", source: "" }],
      };
  if (lane.kind === "direct" && decision.decision === "escalate") {
    throw new DirectCallRefused(`Policy would send this call to reviewers: ${decision.reasons.map((r) => r.text).join(" ")}`, {
      reasons: decision.reasons.map((r) => r.policyId),
    });
  }
  // An escalated run that calls tools that are not read-only is previewed first (lib/runs/preview.ts).
  const decided = decision.decision === "escalate" && analysis.facts.effect !== "read_only" ? "previewing" : STATUS_BY_DECISION[decision.decision];
  const limits = decideRunLimits(analysis.callSites, decision.maxWritesPerTool);
  const skills: SkillRef[] = lane.skill ? [{ name: lane.skill.name, version: lane.skill.version, versionId: lane.skill.versionId }] : (lane.skills ?? []);

  // A run stored queued (auto-approved, or covered by a standing approval) is claimed in this
  // transaction when this process has an idle executor slot.
  const mayQueue = decided === "auto_approved" || Boolean(lane.skill && decision.decision === "escalate");
  const local = mayQueue ? (deps.reserveStart?.() ?? null) : null;
  const storing = db.$transaction(async (tx) => {
    // Checked again under a per-agent lock, so parallel submissions cannot overrun the budgets
    // or store a run under a key another submission has just used, or claim a standing approval
    // another has just used. The lock is taken with the budgets' figures, in one round trip; first,
    // on its own, when a key is looked up or an approval claimed before them.
    if (input.idempotencyKey || lane.skill) await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`budget:${actor.id}`}))`;
    if (input.idempotencyKey) {
      const existing = await tx.run.findUnique({ where: { agentId_idempotencyKey: { agentId: actor.id, idempotencyKey: input.idempotencyKey } } });
      if (existing) return { run: sameRequest(existing, requestDigest), created: false, deferred: false };
    }
    // A run_skill call policy escalates may be covered by a standing approval instead of reviewers.
    const standing =
      lane.skill && decision.decision === "escalate"
        ? await claimStandingApproval(tx, { skillVersionId: lane.skill.versionId, agentId: actor.id, arguments: lane.skill.arguments, runId })
        : null;
    const status = standing ? "pending_review" : decided;
    await enforceBudgets(
      tx,
      actor.id,
      codeSha256,
      { cpuSeconds: limits.cpuSeconds, escalates: !standing && (status === "pending_review" || status === "previewing") },
      true,
    );
    const steps: CreationStep[] = [
      {
        actor: { type: "system", name: "analysis" },
        to: "analyzed",
        data: {
          capabilitySet: runColumnValue("capabilitySet", analysis.capabilitySet),
          findings: runColumnValue("findings", analysis.findings),
          facts: runColumnValue("facts", analysis.facts),
          javascript: analysis.javascript,
        },
        audit: { capabilitySet: analysis.capabilitySet, facts: analysis.facts, findings: analysis.findings.map((f) => f.code) },
      },
      {
        actor: { type: "system", name: "policy" },
        to: status,
        data: {
          decision: decision.decision,
          decisionReasons: runColumnValue("decisionReasons", decision.reasons),
          approvalsRequired: decision.approvalsRequired,
          reviewerRole: decision.reviewerRole ?? null,
          policyVersionId: policy?.id ?? null,
          policyRequest: runColumnValue("policyRequest", policyRequest as RunColumnValue<"policyRequest">),
          limits: runColumnValue("limits", limits),
          reviewExpiresAt:
            !standing && (status === "pending_review" || status === "previewing") ? new Date(Date.now() + env().AIRLOCK_REVIEW_TTL_HOURS * 3_600_000) : null,
        },
        audit: {
          decision: decision.decision,
          policyVersion: policy?.version ?? null,
          // The policy text and the reasons as stored, so a run's evidence proves them (lib/audit/evidence.ts).
          policyTextDigest: policy?.textDigest ?? null,
          decisionReasonsDigest: jsonDigest(runColumnValue("decisionReasons", decision.reasons)),
          reasons: decision.reasons.map((r) => r.policyId),
          approvalsRequired: decision.approvalsRequired,
          reviewerRole: decision.reviewerRole ?? null,
          limits,
        },
      },
    ];
    if (status === "auto_approved") steps.push({ actor: { type: "system", name: "runs" }, to: "queued" });
    if (standing) {
      steps.push(
        {
          actor: { type: "system", name: "standing-approval" },
          to: "approved",
          audit: { standingApproval: standing, approvalsRequired: decision.approvalsRequired },
        },
        { actor: { type: "system", name: "runs" }, to: "queued" },
      );
    }
    const submitted = {
      actor,
      data: {
        id: runId,
        traceparent: traceparentOf(span),
        agentId: actor.id,
        kind: lane.kind,
        language: input.language,
        code: input.code,
        codeSha256,
        purpose: input.purpose,
        provenance: runColumnValue("provenance", input.provenance),
        inputs: runColumnValue("inputs", inputs),
        inputsDigest,
        idempotencyKey: input.idempotencyKey ?? null,
        requestDigest,
        fingerprint: analysis.shape.fingerprint,
        fingerprintHoles: analysis.shape.holes,
        skills: skills,
        standingApprovalId: standing?.id ?? null,
      },
      audit: {
        codeSha256,
        purpose: input.purpose,
        inputsDigest,
        language: input.language,
        provenance: provenanceSeal(input.provenance),
        ...(lane.kind === "direct" ? { kind: lane.kind } : {}),
        ...(skills.length > 0 ? { skills } : {}),
        ...(options.via ? { via: { door: options.via.door, ...actorRef(options.via.by) } } : {}),
      },
    };
    if (local && steps.at(-1)!.to === "queued") {
      // Claimed with its slot, or deferred waiting for one (lib/runs/fair-share.ts) and woken when one frees.
      const { stored: run, outcome } = await local.claimAtIntake(tx, { id: runId, agentId: actor.id }, (claim) =>
        createRun(tx, submitted, claim ? [...steps, claim] : steps),
      );
      return { run, created: true, deferred: outcome === "deferred" };
    }
    return { run: await createRun(tx, submitted, steps), created: true, deferred: false };
  });
  // A reservation the transaction did not get to use goes back (below, for one it did not claim with).
  storing.catch(() => local?.giveBack());
  const stored = await storing;
  const { run } = stored;
  span.setAttribute("airlock.status", run.status);
  if (!stored.created) span.setAttribute(RUN_ID, run.id);
  if (stored.created && run.status === "running") local!.begin(run);
  else local?.giveBack();
  if (stored.created && run.status === "queued" && !stored.deferred) deps.startExecution(run.id);
  if (stored.created && run.status === "previewing") deps.startPreview(run.id);
  if (stored.created && run.status === "pending_review") void notifyEscalation(run.id, db);
  return run;
}

/** Awaits independent work at once; the first of it to fail, in the order given, is thrown, as if each were awaited in turn. */
async function allInOrder<T extends readonly unknown[]>(work: { readonly [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(work);
  for (const outcome of settled) if (outcome.status === "rejected") throw outcome.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** The run stored under the key, if it was stored for this very request; otherwise a conflict. */
function sameRequest(existing: Run, requestDigest: string): Run {
  if (existing.requestDigest !== requestDigest) {
    throw new AppError("conflict", `This idempotencyKey was already used with a different request, run ${existing.id}; use a new key for a new script.`, {
      details: { runId: existing.id },
      next: `To follow the run submitted under this key, call get_run with runId ${existing.id}; to submit this request, use a new idempotencyKey.`,
    });
  }
  return existing;
}
