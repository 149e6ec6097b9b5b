/**
 * Plan preview: a run that policy escalated and that calls tools that are not read-only is first
 * run as a dry run, in the status `previewing`, so reviewers approve the writes themselves and not
 * code they must imagine running.
 *
 * Guarantees:
 * - nothing is written upstream: read-only tools are called for real (through the broker, with
 *   the run's limits and per-tool caps, in the sandbox), every other call is intercepted, recorded
 *   and answered with its tool's declared preview answer or one built from its outputSchema, with
 *   symbolic placeholders for what only the real call can know (lib/runs/plan.ts);
 * - the plan is the ordered list of intercepted writes with their money; it is stored with its
 *   digest on the transition previewing → pending_review, which approvals then bind;
 * - the script is previewed twice, and a plan the two runs do not agree on is never offered
 *   (PLAN_UNSTABLE, naming the first argument that differs): writes that depend on the time or on
 *   randomness could never be made as approved. Its reads reach the upstreams twice, and a preview
 *   may take twice the run's time limit;
 * - a write whose arguments the screen would rewrite (a credential redacted, characters
 *   normalized, ./gate.ts `unreviewableArguments`) is never planned: reviewers would approve
 *   something other than what the upstream gets, so the preview fails (PLAN_UNREVIEWABLE); nor is
 *   one whose arguments the broker would refuse at apply (off the tool's input schema), which
 *   would stop the approved run after the writes before it (INVALID_ARGUMENTS);
 * - nothing from the preview but the plan reaches the agent: its result and logs are dropped; a
 *   preview that fails (a tool error, an exception, a limit) ends the run `failed` with
 *   PREVIEW_FAILED and the preview's error before any person is asked;
 * - every call of the preview is recorded with `phase: "preview"` in the transaction that ends the
 *   preview (intercepted writes with outcome "intercepted", never "started", so recovery never
 *   mistakes them for effects);
 * - a preview is claimed once (conditional on `previewing` and no live heartbeat), heartbeats
 *   while it runs, and stops when the run is cancelled; a preview whose executor was lost is run
 *   again by the maintenance sweep (it made no writes).
 */
import type { Span } from "@opentelemetry/api";
import type { Db } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import type { Run } from "@/lib/generated/prisma/client";
import { runColumn, runColumnValue, type PlanWrite } from "@/lib/contracts/run-columns";
import type { CallTool, Envelope, JsonValue, RunRequest } from "@/lib/sandbox";
import { jsonLooksLikeInstructions, looksLikeInstructions } from "@/lib/untrusted/sanitize";
import { normalizeContent } from "@/lib/untrusted/storable-text";
import { RUN_ID, contextOf, contextWith, inSpan } from "@/lib/tracing";
import { screenJson, screenMessage, unreviewableArguments } from "./gate";
import { MarkedValues, assignTokens, decideTokens, holdsPersonalData, personalData, tokenScope, type TokenDecision } from "./pii-tokens";
import type { ToolInfo } from "@/lib/broker/types";
import type { SchemaIssue } from "@/lib/broker/schema-check";
import type { MoneyHint } from "@/lib/contracts/preview-hints";
import { approvedRequest, startHeartbeat } from "./executor";
import { insertToolCalls, storedJson } from "@/lib/audit/stored-calls";
import { stagedDatasets } from "./staged-datasets";
import { parseRunLimits } from "./limits";
import { moneyOf, placeholderPointers, planDigest, previewAnswer, strayPlaceholder, unshownMoney, unstablePlan } from "./plan";
import { UNREVIEWED_PERSONAL_DATA_FLAG, UPSTREAM_INSTRUCTIONS_FLAG, decideResultRelease } from "./release-decision";
import { transitionRun } from "./states";

export type PreviewDeps = {
  db: Db;
  runScript(request: RunRequest): Promise<Envelope>;
  /** Calls an upstream tool through the broker (read-only tools only, here). */
  callTool: CallTool;
  /** What the registry knows of a tool that a preview answers instead of calling. */
  tool(server: string, name: string): Pick<ToolInfo, "outputSchema" | "preview" | "dataClass" | "piiFields"> | undefined;
  /** Why the broker would refuse these arguments before calling the tool, or null (lib/broker/broker.ts argumentsProblem). */
  argumentsProblem(server: string, name: string, args: JsonValue, ignore?: (issue: SchemaIssue) => boolean): string | null;
  executorId: string;
  /** Tells reviewers that the run now waits for them (lib/runs/notify.ts, passed in). */
  onPendingReview?(runId: string): Promise<void>;
  /** Settings remembered until they change (lib/db/remembered.ts): the published policy release decides on. */
  remembered?: Remembered;
  heartbeatMs?: number;
};

/** A preview whose executor has not heartbeated for this long may be claimed again. */
export const PREVIEW_LOST_AFTER_MS = 30_000;
const SYSTEM = { type: "system", name: "preview" } as const;

type PreviewCall = {
  seq: number;
  server: string;
  tool: string;
  readOnly: boolean;
  args: JsonValue;
  result: JsonValue | null;
  outcome: "ok" | "error" | "intercepted" | "refused";
  error: string | null;
  durationMs: number;
};

async function claim(db: Db, runId: string, executorId: string, now = new Date()) {
  const claimed = await db.run.updateMany({
    where: { id: runId, status: "previewing", OR: [{ heartbeatAt: null }, { heartbeatAt: { lt: new Date(now.getTime() - PREVIEW_LOST_AFTER_MS) } }] },
    data: { executorId, heartbeatAt: now },
  });
  return claimed.count === 1 ? db.run.findUniqueOrThrow({ where: { id: runId } }) : null;
}

/** Runs the preview of a `previewing` run and ends it in pending_review or failed. Returns false if it was not this executor's to run. */
export async function previewRun(deps: PreviewDeps, runId: string, shutdown?: AbortSignal): Promise<boolean> {
  const { db } = deps;
  const run = await claim(db, runId, deps.executorId);
  if (!run) return false;
  const attributes = { [RUN_ID]: runId, "airlock.attempt": run.attempt, "airlock.executor_id": deps.executorId };
  return inSpan("airlock.preview", contextOf(run.traceparent), attributes, (span) => previewClaimed(deps, run, span, shutdown));
}

async function previewClaimed(deps: PreviewDeps, run: Run, span: Span, shutdown?: AbortSignal): Promise<boolean> {
  const { db } = deps;
  const runId = run.id;
  const limits = parseRunLimits(run);
  const fence = { runId, executorId: deps.executorId, attempt: run.attempt };
  const controller = new AbortController();
  const onShutdown = () => controller.abort();
  shutdown?.addEventListener("abort", onShutdown);
  const stopHeartbeat = startHeartbeat(db, fence, controller, deps.heartbeatMs ?? 1000, "previewing");

  const scope = tokenScope(run);
  const marked = new MarkedValues();
  const context = { run, span, limits, scope, marked, controller };
  const first = previewRecorder(deps, context, 1);
  let second: PreviewRecorder | null = null;
  let failure: string | null = null;
  try {
    const staged = await stagedDatasets(db, runColumn(run, "inputs") ?? []);
    failure = previewFailure(first, await deps.runScript(approvedRequest(run, staged, first.callTool, controller.signal)));
    if (failure === null) {
      // Run again: a write whose arguments differ between the two runs (they depend on the time,
      // randomness, or data that changed meanwhile) could never be made as approved, so no
      // reviewer is asked to approve it.
      second = previewRecorder(deps, context, first.calls.length + 1);
      const again = await deps.runScript(approvedRequest(run, staged, second.callTool, controller.signal));
      failure = previewFailure(second, again) ?? unstablePlan(first.writes, second.writes);
    }
  } catch (error) {
    failure = `SANDBOX_UNAVAILABLE: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    stopHeartbeat();
    shutdown?.removeEventListener("abort", onShutdown);
  }
  // A shutdown leaves the run previewing with a stale heartbeat: the sweep runs it again.
  if (shutdown?.aborted) return true;

  const calls = [...first.calls, ...(second?.calls ?? [])];
  const writes = first.writes;
  const upstreamInstructions = first.state.upstreamInstructions || second?.state.upstreamInstructions === true;
  // No person has reviewed the script yet: personal data its reads returned could reach the agent
  // spelt otherwise, in the plan's arguments or the failure's text (as for a result, ./executor.ts).
  const answers = [...first.state.answers, ...(second?.state.answers ?? [])];
  const personalRead = answers.length > 0 && (await holdsPersonalData(answers, marked));
  const plan = { digest: planDigest(writes), writes };
  // What the agent reads of the preview — the plan, or why it failed — screened, its personal data
  // as tokens (lib/runs/service.ts), assigned with the outcome.
  const failureMessage =
    failure === null ? null : screenMessage(`The plan preview failed, so no reviewer was asked. ${failure}`, "error.message").value.slice(0, 4000);
  const personal = await personalData([writes.map((w) => [w.arguments, w.answer, w.money?.subject ?? null]), failureMessage], marked);
  // Reads were real: whether the plan's arguments (or why the preview failed) reach the agent is the
  // release policies' to decide, as for a result (./release-decision.ts).
  const flags = [...(upstreamInstructions ? [UPSTREAM_INSTRUCTIONS_FLAG] : []), ...(personalRead ? [UNREVIEWED_PERSONAL_DATA_FLAG] : [])];
  const release = await decideResultRelease(db, run, { flags, result: writes as JsonValue }, deps.remembered);
  const ended = await db.$transaction(async (tx) => {
    const held = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM "Run" WHERE id = ${runId}::uuid AND status = 'previewing' AND "executorId" = ${deps.executorId} FOR UPDATE`;
    if (held.length === 0) return false; // cancelled, or taken over after a lost heartbeat
    await insertToolCalls(
      tx,
      runId,
      calls.map((call) => ({ ...call, phase: "preview", args: storedJson(call.args), result: call.result === null ? null : storedJson(call.result) })),
    );
    if (failureMessage !== null) {
      const failed = await transitionRun(tx, SYSTEM, {
        runId,
        from: "previewing",
        to: "failed",
        data: {
          finishedAt: new Date(),
          error: runColumnValue("error", { code: "PREVIEW_FAILED", message: failureMessage, untrusted: true }),
          releaseDecision: runColumnValue("releaseDecision", release),
        },
        audit: { errorCode: "PREVIEW_FAILED", calls: calls.length, releaseDecision: release },
      });
      if (failed) await assignTokens(tx, scope, runId, personal);
      return failed;
    }
    const moved = await transitionRun(tx, SYSTEM, {
      runId,
      from: "previewing",
      to: "pending_review",
      data: { plan: runColumnValue("plan", plan), releaseDecision: runColumnValue("releaseDecision", release) },
      audit: { planDigest: plan.digest, writes: writes.length, reads: first.calls.length - writes.length, releaseDecision: release },
    });
    if (moved) await assignTokens(tx, scope, runId, personal);
    return moved;
  });
  if (ended && failureMessage === null) await deps.onPendingReview?.(runId);
  return true;
}

type PreviewContext = { run: Run; span: Span; limits: ReturnType<typeof parseRunLimits>; scope: string; marked: MarkedValues; controller: AbortController };

/** One run of the script in preview: its calls (numbered from `firstSeq` in the record), the writes it planned, and why it must fail, if it must. */
type PreviewRecorder = {
  callTool: CallTool;
  calls: PreviewCall[];
  writes: PlanWrite[];
  /** answers: what the reads answered, errors included, for the personal-data hold (no person reviewed the script yet). */
  state: { exfiltration: string | null; unplannable: string | null; upstreamInstructions: boolean; answers: JsonValue[] };
};

function previewRecorder(deps: PreviewDeps, { run, span, limits, scope, marked, controller }: PreviewContext, firstSeq: number): PreviewRecorder {
  const { db } = deps;
  const runId = run.id;
  const calls: PreviewCall[] = [];
  const writes: PlanWrite[] = [];
  const state: PreviewRecorder["state"] = { exfiltration: null, unplannable: null, upstreamInstructions: false, answers: [] };
  const callTool: CallTool = async (server, tool, args, signal) => {
    // `seq` numbers this preview's calls (the plan and its placeholders); the record numbers both previews' in one sequence.
    const seq = calls.length + 1;
    const normalized = normalizeContent(args);
    const safeArgs = normalized.value as JsonValue;
    // Recorded and planned screened (./gate.ts): the executor follows the plan in the same form.
    const screened = screenJson(safeArgs, `toolCall[${seq}].arguments`);
    const storedArgs = screened.value;
    const readOnly = limits !== null && !Object.hasOwn(limits.writeCaps, `${server}.${tool}`);
    const call: PreviewCall = {
      seq: firstSeq + seq - 1,
      server,
      tool,
      readOnly,
      args: storedArgs,
      result: null,
      outcome: "intercepted",
      error: null,
      durationMs: 0,
    };
    calls.push(call);
    const info = deps.tool(server, tool);
    // The same token rules as the run itself (./pii-tokens.ts): a token given to a tool not classed pii ends the preview.
    let tokens: TokenDecision;
    try {
      tokens = await decideTokens(db, scope, info && { dataClass: info.dataClass, name: `${server}.${tool}`, piiFields: info.piiFields }, safeArgs);
    } catch (error) {
      call.outcome = "refused";
      call.error = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
      throw error;
    }
    if (tokens.refused !== null) {
      state.exfiltration ??= tokens.refused;
      call.outcome = "refused";
      call.error = tokens.refused.slice(0, 2000);
      controller.abort();
      throw new Error(`CAPABILITY_DENIED: ${tokens.refused}`);
    }
    marked.note(info?.piiFields, tokens.args);
    if (!readOnly) {
      // What the preview answers and the money the write moves, from its arguments or that answer.
      const answer = previewAnswer(seq, storedArgs, info?.preview ?? null, info?.outputSchema ?? null);
      const moneyHint = info?.preview?.money ?? null;
      const money = moneyOf(moneyHint, storedArgs, answer);
      const problem = unplannableWrite(deps, {
        server,
        tool,
        args: tokens.restored ? tokens.args : args,
        normalized: normalized.changed,
        screened,
        writes,
        answer,
        moneyHint,
        money,
      });
      if (problem) {
        state.unplannable ??= `${problem.kind}: write ${writes.length + 1} (${server}.${tool}): ${problem.why}`;
        call.outcome = "refused";
        call.error = state.unplannable.slice(0, 2000);
        controller.abort();
        throw new Error(state.unplannable);
      }
      writes.push({ seq, server, tool, arguments: storedArgs, answer, money });
      call.result = answer;
      return answer;
    }
    const started = performance.now();
    try {
      // Screened as in the run itself (./gate.ts): no secret an upstream returns reaches the script or the record.
      const answer = await inSpan("airlock.tool_call", contextWith(span), { [RUN_ID]: runId, "airlock.tool": `${server}.${tool}`, "airlock.seq": seq }, () =>
        deps.callTool(server, tool, tokens.restored ? tokens.args : args, signal),
      );
      const result = screenJson(answer, `toolCall[${seq}].result`).value;
      marked.note(info?.piiFields, result);
      state.upstreamInstructions ||= jsonLooksLikeInstructions(result);
      state.answers.push(result);
      call.outcome = "ok";
      call.result = result;
      return result;
    } catch (error) {
      const message = screenMessage(error, `toolCall[${seq}].error`);
      state.upstreamInstructions ||= looksLikeInstructions(message.value);
      state.answers.push(message.value);
      call.outcome = "error";
      call.error = message.value.slice(0, 2000);
      throw message.redactions.length > 0 ? new Error(message.value) : error;
    } finally {
      call.durationMs = Math.round(performance.now() - started);
    }
  };
  return { callTool, calls, writes, state };
}

/** Why a preview run must fail the run, or null when it planned its writes. */
function previewFailure({ state }: PreviewRecorder, envelope: Envelope): string | null {
  if (state.exfiltration) return `CAPABILITY_DENIED: ${state.exfiltration}`;
  if (state.unplannable) return state.unplannable;
  if (envelope.status !== "succeeded") return `${envelope.error?.code ?? "SCRIPT_ERROR"}: ${envelope.error?.message ?? "the preview did not finish"}`;
  return null;
}

/**
 * Why a write cannot be planned, or null: the screen would rewrite its arguments (a credential
 * redacted, characters normalized), they hold a placeholder no earlier planned write answered
 * with, or the broker would refuse them at apply (the approved run would stop there, after the
 * writes before it were made).
 */
function unplannableWrite(
  deps: Pick<PreviewDeps, "argumentsProblem">,
  write: {
    server: string;
    tool: string;
    args: JsonValue;
    normalized: boolean;
    screened: ReturnType<typeof screenJson>;
    writes: readonly PlanWrite[];
    answer: JsonValue;
    moneyHint: MoneyHint | null;
    money: PlanWrite["money"];
  },
): { kind: "PLAN_UNREVIEWABLE" | "INVALID_ARGUMENTS"; why: string } | null {
  const unreviewable = unreviewableArguments(write.normalized, write.screened);
  if (unreviewable) {
    return {
      kind: "PLAN_UNREVIEWABLE",
      why: `${unreviewable}, so no reviewer could see what it would send. Keep credentials out of a write's arguments: the broker holds the upstreams' credentials.`,
    };
  }
  const stray = strayPlaceholder(write.screened.value, write.writes);
  if (stray) {
    return {
      kind: "PLAN_UNREVIEWABLE",
      why: `its arguments hold "${stray.slice(0, 200)}", which no earlier planned write answered with: only a value an upstream assigns stands in a plan for what the real call will return, so no reviewer could see what it would send.`,
    };
  }
  const unshown = unshownMoney(write.moneyHint, write.money, write.screened.value, write.answer);
  if (unshown) return { kind: "PLAN_UNREVIEWABLE", why: unshown };
  const invalid = deps.argumentsProblem(write.server, write.tool, write.args, aboutPlaceholders(write.screened.value));
  return invalid ? { kind: "INVALID_ARGUMENTS", why: `${invalid}. The broker refuses such a call, so it cannot be planned.` } : null;
}

/**
 * Whether a schema issue is about a placeholder (`@plan:…`): a value only the real call will know,
 * checked by the broker at apply when it is known. Issues at the placeholder itself or inside it
 * only; a combinator (anyOf, oneOf, not, if) over one is not excused, since it could as well fail
 * for another argument: such a write is not planned (fail closed).
 */
function aboutPlaceholders(args: JsonValue): ((issue: SchemaIssue) => boolean) | undefined {
  const pointers = placeholderPointers(args);
  if (pointers.length === 0) return undefined;
  return (issue) => pointers.some((pointer) => issue.path === pointer || issue.path.startsWith(`${pointer}/`));
}
