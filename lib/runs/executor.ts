/**
 * Executes one queued run: a script in the sandbox, or a direct call (call_tool) without one.
 *
 * Guarantees:
 * - a run is claimed once: `queued → running` is a conditional transition; a second executor gets
 *   nothing and walks away (a run intake stores claimed, lib/runs/queue.ts LocalStart, is never queued). Every later write (heartbeat, call records, the terminal state) is
 *   fenced by status, executor id and attempt, so an executor that was declared lost cannot write
 *   into the retry that replaced it;
 * - a run decided at `strict` never executes below it: an executor that runs at permission-only
 *   (started degraded, lib/runs/isolation.ts) fails such a run with SANDBOX_UNAVAILABLE unrun;
 * - the sandbox gets exactly what was approved: the capability set, the JavaScript analysis
 *   produced, the datasets named at intake (files checked against their approved sha256 on every
 *   use, ./staged-datasets.ts), and the limits policy decided (`Run.limits`: wall clock, CPU,
 *   heap, total tool calls, per-tool caps for tools that are not read-only);
 * - a run with an approved plan (lib/runs/preview.ts) follows it: every call to a tool that is not
 *   read-only must be the next planned write with the same arguments (lib/runs/plan.ts); otherwise
 *   the call is not made, the run stops and ends `failed` with PLAN_DIVERGED, listing the calls
 *   already made;
 * - the record comes before the effect: a call to a tool that is not read-only is committed as
 *   "started" before it is forwarded, and if that record cannot be written the call is not made
 *   and the run fails with STORAGE_REJECTED (lib/runs/call-recorder.ts);
 * - content from the script and from upstreams (results, logs, errors, tool arguments and tool
 *   results) is screened once (./gate.ts: normalized, secrets redacted) before it is stored,
 *   sealed or returned — a tool's result before the script sees it; the upstream gets the
 *   arguments as sent; the envelope is flagged `content_normalized` / `secret_redacted`;
 * - every run that executed gets its release decision before the write that ends its execution
 *   (./release-decision.ts; flag `upstream_instruction_like` when a tool's answer reads like
 *   instructions to the model, `unreviewed_personal_data` when a script policy allowed without a
 *   reviewer read personal data from a tool, which it could hand over in a form the tokens do not
 *   catch): one that succeeded ends succeeded, or `pending_release` when a
 *   release policy holds the result for reviewers, or `withheld`; for any other, a decision that is
 *   not allow keeps its logs and error text from the agent (lib/runs/service.ts);
 * - the files the script wrote under ./out/ are stored with the terminal state, in its transaction
 *   (lib/runs/artifacts.ts), and listed with their sha256 in `execution`, which its event digests;
 * - the run always ends: the terminal state is written conditionally on `running` with the whole
 *   envelope and its audit event; if that write fails anyway, a second, minimal write ends the run
 *   `failed` with STORAGE_REJECTED and its audit event. Only if both fail (the database is gone)
 *   is the run left to the maintenance sweep, which never re-runs a run that made a call that was
 *   not read-only;
 * - while it runs, the executor heartbeats and polls `cancelRequestedAt`, aborting the sandbox when
 *   a cancel arrives from any process;
 * - once the write that ends its execution committed, the row it wrote is handed to the waits for
 *   the run in this process (`handOver`, ./run-changes.ts); a wait elsewhere learns of it by NOTIFY.
 */
import type { Span } from "@opentelemetry/api";
import { afterCommit, type Db } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import { runColumn, runColumnValue } from "@/lib/contracts/run-columns";
import { jsonDigest } from "@/lib/digest";
import type { Prisma, Run } from "@/lib/generated/prisma/client";
import type { CallTool, Envelope, JsonValue, RunRequest } from "@/lib/sandbox";
import type { ToolInfo } from "@/lib/broker/types";
import { RUN_LIMIT_DEFAULTS, emptyGate, type IsolationLevel } from "@/lib/sandbox/types";
import { parseDirectCall } from "@/lib/contracts/direct-call";
import { jsonLooksLikeInstructions, looksLikeInstructions, sanitizeJson } from "@/lib/untrusted/sanitize";
import { CONTENT_NORMALIZED_FLAG, normalizeContent } from "@/lib/untrusted/storable-text";
import { RUN_ID, contextOf, contextWith, inSpan } from "@/lib/tracing";
import { artifactRecords, storeArtifacts } from "./artifacts";
import { storedJson } from "@/lib/audit/stored-calls";
import { CallRecorder, StorageRejected, type CallRow, type RunFence } from "./call-recorder";
import { parseRunLimits } from "./limits";
import { stagedDatasets } from "./staged-datasets";
import { screenEnvelope, screenJson, screenMessage, unreviewableArguments, type Redaction } from "./gate";
import { MarkedValues, assignTokens, decideTokens, holdsPersonalData, personalData, tokenScope, type PiiValue, type TokenDecision } from "./pii-tokens";
import { PlanFollower, type PlanCheck } from "./plan";
import { UNREVIEWED_PERSONAL_DATA_FLAG, UPSTREAM_INSTRUCTIONS_FLAG, decideResultRelease, releaseOutcome, type ReleaseDecision } from "./release-decision";
import { transitionRun, transitionRunReturning } from "./states";
import { inSubmittedPositions } from "@/lib/script-transpile";

export type ExecutorDeps = {
  db: Db;
  /** Runs one script in the sandbox (cold or from the warm pool) with the configured isolation. */
  runScript(request: RunRequest): Promise<Envelope>;
  /** Calls an upstream tool through the broker. */
  callTool: CallTool;
  /** Identifies this executor in `Run.executorId`. */
  executorId: string;
  /** The level this executor's sandboxes run at; a run decided at a stricter one is not run here. */
  isolation: IsolationLevel;
  /** What the registry knows of a tool: its data class (a pii tool gets tokens restored) and its marked personal-data fields. */
  tool(server: string, name: string): Pick<ToolInfo, "dataClass" | "piiFields"> | undefined;
  /** Given the row of a run whose execution this executor ended, once that write committed: waits in this process end with it (./run-changes.ts). */
  handOver?(run: Run): void;
  /** Settings remembered until they change (lib/db/remembered.ts): the published policy release decides on. */
  remembered?: Remembered;
  heartbeatMs?: number;
};

const SYSTEM = { type: "system", name: "executor" } as const;

/** The claim's move to `running`: what it writes and records, whether a queued run is claimed or intake stores one claimed. */
export function claimStep(executorId: string, now = new Date()) {
  return { actor: SYSTEM, to: "running", data: { executorId, startedAt: now, heartbeatAt: now }, audit: { executorId } } as const;
}

async function claim(db: Db, runId: string, executorId: string) {
  const { actor, ...step } = claimStep(executorId);
  return db.$transaction(async (tx) => transitionRunReturning(tx, actor, { runId, from: "queued", ...step }));
}

function failedEnvelope(code: "SANDBOX_UNAVAILABLE" | "STORAGE_REJECTED", message: string, toolCalls: number): Envelope {
  return {
    status: "failed",
    result: null,
    logs: [],
    error: { code, message, untrusted: false },
    stats: { wallMs: 0, cpuMs: 0, peakRssMb: 0, toolCalls },
    flags: [],
    truncated: false,
    isolation: { level: "strict", node: "", layers: { permissionModel: false, bubblewrap: false, prlimit: false, uid: null, cgroup: "none" } },
    artifacts: [],
    gate: emptyGate(),
  };
}

/** What the sandbox is given for a run: exactly what was approved (the analysed code, the capability set, the decided limits and caps). */
export function approvedRequest(run: Run, inputs: RunRequest["inputs"], callTool: CallTool, signal: AbortSignal): RunRequest {
  const limits = parseRunLimits(run);
  return {
    code: run.javascript ?? run.code,
    language: run.javascript ? "javascript" : run.language,
    inputs,
    allowedTools: runColumn(run, "capabilitySet") ?? [],
    callTool,
    limits: limits ? { timeoutMs: limits.timeoutMs, cpuSeconds: limits.cpuSeconds, heapMb: limits.heapMb, maxToolCalls: limits.maxToolCalls } : undefined,
    toolCallCaps: limits?.writeCaps,
    signal,
  };
}

/**
 * Heartbeats while the run is held in `status` (running, or previewing for a preview); aborts when
 * a cancel was requested from any process, or when the run is no longer held.
 */
export function startHeartbeat(
  db: Db,
  fence: RunFence,
  controller: AbortController,
  everyMs: number,
  status: "running" | "previewing" = "running",
): () => void {
  const timer = setInterval(() => {
    void db.$queryRaw<{ cancelRequestedAt: Date | null }[]>`
      UPDATE "Run" SET "heartbeatAt" = now()
      WHERE id = ${fence.runId}::uuid AND status = ${status}::"RunStatus" AND "executorId" = ${fence.executorId} AND attempt = ${fence.attempt}
      RETURNING "cancelRequestedAt"`
      .then((rows) => {
        // No row: the run was taken from this executor (declared lost); stop working on it.
        if (rows.length === 0 || rows[0]!.cancelRequestedAt) controller.abort();
      })
      .catch(() => {});
  }, everyMs);
  return () => clearInterval(timer);
}

/**
 * Claims and runs a queued run to its terminal state. Returns false if another executor had it.
 * `shutdown` aborts the sandbox when this executor must stop (a draining worker past its grace
 * period); the run then fails explicitly with EXECUTOR_LOST instead of being left running.
 */
export async function executeRun(deps: ExecutorDeps, runId: string, shutdown?: AbortSignal): Promise<boolean> {
  const { db } = deps;
  const run = await claim(db, runId, deps.executorId);
  if (!run) return false;
  // A retried run keeps the calls of its earlier attempt, and a previewed one its preview's; number after them.
  const previous = await db.runToolCall.aggregate({ where: { runId }, _max: { seq: true } });
  await executeClaimedRun(deps, run, previous._max.seq ?? 0, shutdown);
  return true;
}

/**
 * A script no person approved: policy allowed it. A direct call runs no script. A script that calls
 * a published skill is the agent's own code around it, so it counts as unreviewed; so does a
 * run_skill call policy allowed (its arguments were reviewed by nobody), which fails closed.
 */
export function unreviewedScript(run: Pick<Run, "decision" | "kind">): boolean {
  return run.decision === "allow" && run.kind !== "direct";
}

/**
 * Runs a run this executor has claimed (`running` under its executorId) to its terminal state; its
 * calls are numbered after `seqBase`, the last one recorded (0 for a run intake stored claimed).
 */
export async function executeClaimedRun(deps: ExecutorDeps, run: Run, seqBase: number, shutdown?: AbortSignal): Promise<void> {
  // The run's trace started at its submission, in whichever process that was (lib/tracing.ts).
  const attributes = { [RUN_ID]: run.id, "airlock.kind": run.kind, "airlock.attempt": run.attempt, "airlock.executor_id": deps.executorId };
  await inSpan("airlock.run", contextOf(run.traceparent), attributes, (span) => executeClaimed(deps, run, seqBase, span, shutdown));
}

async function executeClaimed(deps: ExecutorDeps, run: Run, seqBase: number, span: Span, shutdown?: AbortSignal): Promise<void> {
  const { db } = deps;
  const runId = run.id;
  const fence: RunFence = { runId, executorId: deps.executorId, attempt: run.attempt };
  const limits = parseRunLimits(run);

  const controller = new AbortController();
  const onShutdown = () => controller.abort();
  shutdown?.addEventListener("abort", onShutdown);
  // A run begun after the drain's deadline (intake claimed it as the process began stopping) stops at once too.
  if (shutdown?.aborted) controller.abort();
  const recorder = new CallRecorder(db, fence);
  const stopHeartbeat = startHeartbeat(db, fence, controller, deps.heartbeatMs ?? 1000);
  let calls = 0;
  let normalized = false;
  let storageFailure: StorageRejected | null = null;
  const plan = runColumn(run, "plan");
  const follower = plan ? new PlanFollower(plan) : null;
  let divergence: string | null = null;
  const made: string[] = [];

  const toolRedactions: Redaction[] = [];
  const scope = tokenScope(run);
  const marked = new MarkedValues();
  let exfiltration: string | null = null;
  let upstreamInstructions = false;
  // What tools answered a script no person reviewed (policy allowed it), their errors included:
  // scanned for personal data at the end (UNREVIEWED_PERSONAL_DATA_FLAG).
  const unreviewedAnswers: JsonValue[] | null = unreviewedScript(run) ? [] : null;
  const callTool: CallTool = async (server, tool, args, signal) => {
    const seq = seqBase + ++calls;
    const started = performance.now();
    const safeArgs = normalizeContent(args);
    normalized ||= safeArgs.changed;
    // Stored (and digested) with secrets redacted; the upstream gets the arguments as sent.
    const storedArgs = screenJson(safeArgs.value, `toolCall[${seq}].arguments`);
    toolRedactions.push(...storedArgs.redactions);
    const row: CallRow = {
      seq,
      server,
      tool,
      // A run stored before limits were decided treats every tool as one that may have an effect.
      readOnly: limits !== null && !Object.hasOwn(limits.writeCaps, `${server}.${tool}`),
      args: storedJson(storedArgs.value),
      result: null,
      durationMs: 0,
      outcome: "ok",
      error: null,
      started: false,
    };
    let plannedSeq: number | null = null;
    if (!row.readOnly && follower) {
      // Compared as planned: screened (./gate.ts). A write the screen rewrote was never planned
      // (./preview.ts): its screened form could stand for other arguments than those approved.
      const unreviewable = unreviewableArguments(safeArgs.changed, storedArgs);
      const checked: PlanCheck = unreviewable
        ? { ok: false, reason: `${server}.${tool}: ${unreviewable}; no reviewer saw what it would send` }
        : follower.check(server, tool, storedArgs.value);
      if (!checked.ok) {
        divergence ??= checked.reason;
        row.outcome = "refused";
        row.error = `not made: the run left its approved plan (${checked.reason})`.slice(0, 2000);
        recorder.add(row);
        controller.abort();
        throw new Error(`PLAN_DIVERGED: ${checked.reason}`);
      }
      plannedSeq = checked.seq;
    }
    // Personal-data tokens: a pii tool gets their values (and the record shows what it got); any
    // other tool given one of this conversation's tokens is refused, and the run fails (./pii-tokens.ts).
    const info = deps.tool(server, tool);
    let tokens: TokenDecision;
    try {
      tokens = await decideTokens(
        db,
        scope,
        info && { dataClass: info.dataClass, name: `${server}.${tool}`, piiFields: info.piiFields },
        safeArgs.value as JsonValue,
      );
    } catch (error) {
      row.outcome = "refused";
      row.error = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
      recorder.add(row);
      throw error;
    }
    if (tokens.refused !== null) {
      exfiltration ??= tokens.refused;
      row.outcome = "refused";
      row.error = `not made: ${tokens.refused}`.slice(0, 2000);
      recorder.add(row);
      controller.abort();
      throw new Error(`CAPABILITY_DENIED: ${tokens.refused}`);
    }
    const upstreamArgs = tokens.restored ? tokens.args : args;
    if (tokens.restored) {
      const stored = screenJson(upstreamArgs, `toolCall[${seq}].arguments`);
      row.args = storedJson(stored.value);
    }
    marked.note(info?.piiFields, upstreamArgs);
    if (!row.readOnly) {
      try {
        await recorder.start(row);
      } catch (error) {
        storageFailure ??= error as StorageRejected;
        controller.abort();
        throw new Error("the call could not be recorded, so it was not made");
      }
    }
    try {
      const answer = await inSpan("airlock.tool_call", contextWith(span), { [RUN_ID]: runId, "airlock.tool": `${server}.${tool}`, "airlock.seq": seq }, () =>
        deps.callTool(server, tool, upstreamArgs, signal),
      );
      // Screened before the script sees it: a secret an upstream returns never enters the sandbox.
      const result = screenJson(answer, `toolCall[${seq}].result`);
      normalized ||= result.changed;
      toolRedactions.push(...result.redactions);
      upstreamInstructions ||= jsonLooksLikeInstructions(result.value);
      marked.note(info?.piiFields, result.value);
      unreviewedAnswers?.push(result.value);
      row.result = storedJson(result.value);
      if (plannedSeq !== null) follower?.made(plannedSeq, result.value as JsonValue);
      return result.value;
    } catch (error) {
      const message = screenMessage(error, `toolCall[${seq}].error`);
      normalized ||= message.changed;
      toolRedactions.push(...message.redactions);
      upstreamInstructions ||= looksLikeInstructions(message.value);
      unreviewedAnswers?.push(message.value);
      row.outcome = "error";
      row.error = message.value.slice(0, 2000);
      // The script gets the screened message: a secret in an upstream's error does not enter the sandbox either.
      throw message.redactions.length > 0 ? new Error(message.value) : error;
    } finally {
      row.durationMs = Math.round(performance.now() - started);
      recorder.add(row);
      made.push(`#${seq} ${server}.${tool} (${row.outcome})`);
    }
  };

  let envelope: Envelope;
  const decidedAt = decidedIsolation(run);
  try {
    if (run.kind === "direct") {
      envelope = await callDirectly(run, callTool, controller.signal, deps.isolation);
    } else {
      if (decidedAt === "strict" && deps.isolation !== "strict") {
        throw new Error(`the run was decided for strict isolation, and this executor runs at ${deps.isolation}; it was not run`);
      }
      const staged = await stagedDatasets(db, runColumn(run, "inputs") ?? []);
      envelope = await deps.runScript(approvedRequest(run, staged, callTool, controller.signal));
    }
  } catch (error) {
    envelope = failedEnvelope("SANDBOX_UNAVAILABLE", error instanceof Error ? error.message : String(error), calls);
  } finally {
    stopHeartbeat();
  }
  shutdown?.removeEventListener("abort", onShutdown);
  try {
    await recorder.flush();
  } catch (error) {
    storageFailure ??= error as StorageRejected;
  }
  if (storageFailure) {
    envelope = { ...envelope, status: "failed", result: null, error: { code: "STORAGE_REJECTED", message: storageFailure.message, untrusted: false } };
  } else if (exfiltration) {
    envelope = {
      ...envelope,
      status: "failed",
      result: null,
      error: { code: "CAPABILITY_DENIED", message: `The run was stopped: ${exfiltration}.`, untrusted: true },
    };
  } else if (divergence) {
    const message = `The run left its approved plan and was stopped before that call: ${divergence}. Calls made: ${made.join(", ") || "none"}.`;
    envelope = { ...envelope, status: "failed", result: null, error: { code: "PLAN_DIVERGED", message: message.slice(0, 4000), untrusted: true } };
  } else if (envelope.status === "succeeded" && declaredChecksNotRun(run, envelope).length > 0) {
    // Policy decided on the checks the script declares (resource.checks): one that never ran is a failed check.
    const missing = declaredChecksNotRun(run, envelope);
    envelope = {
      ...envelope,
      status: "check_failed",
      error: {
        code: "CHECK_FAILED",
        message: `The script declares checks.${missing.join(", checks.")}, which never ran; policy decided on it, so the result is withheld.`,
        untrusted: false,
      },
    };
  } else if (controller.signal.aborted && envelope.status !== "succeeded") {
    envelope = shutdown?.aborted
      ? { ...envelope, status: "failed", error: { code: "EXECUTOR_LOST", message: "The executor shut down before the run finished.", untrusted: false } }
      : { ...envelope, status: "cancelled", error: { code: "CANCELLED", message: "Cancelled while running.", untrusted: false } };
  }
  // A TypeScript script runs as emitted: its stack is told in the lines the agent wrote.
  if (run.language === "typescript" && run.javascript && envelope.error?.detail) {
    envelope = { ...envelope, error: { ...envelope.error, detail: inSubmittedPositions(envelope.error.detail, run.code) } };
  }
  const screened = screenEnvelope(envelope, normalized, toolRedactions);
  if (upstreamInstructions) screened.flags.push(UPSTREAM_INSTRUCTIONS_FLAG);
  // Tokens catch personal data handed over as read, not spelt as character codes, split or
  // reversed: a script no person reviewed that read any has its result held for one.
  if (unreviewedAnswers && unreviewedAnswers.length > 0 && (await holdsPersonalData(unreviewedAnswers, marked))) {
    screened.flags.push(UNREVIEWED_PERSONAL_DATA_FLAG);
  }
  // What the agent will read of this run, scanned once here; its tokens are assigned with the terminal write.
  const gate = screened.gate;
  const personal = await personalData(
    [screened.result, screened.logs.map((l) => l.text), screened.error?.message, screened.error?.detail, gate.checks, gate.assumptions, gate.partial],
    marked,
  );
  // Whether the agent gets what the run produced now, after reviewers release it, or not at all (release
  // policies): a result, and as much the logs and errors of a run that failed, which can carry the same data.
  const release = await decideResultRelease(db, run, screened, deps.remembered);
  await finish(deps, fence, screened, { scope, personal }, release);
  span.setAttribute("airlock.status", screened.status);
}

/**
 * A direct run (call_tool): the one call its code names (lib/contracts/direct-call.ts), through
 * the same recorded, screened callTool a script's calls take, within the run's wall-clock limit;
 * no sandbox starts, so the envelope reports no isolation layer. Its result is the tool's answer,
 * sanitized as a script's result is.
 */
async function callDirectly(run: Run, callTool: CallTool, signal: AbortSignal, level: IsolationLevel): Promise<Envelope> {
  const call = parseDirectCall(run.code);
  if (!call) throw new Error("the run's code is not a direct call; it was not run");
  const timeoutMs = parseRunLimits(run)?.timeoutMs ?? RUN_LIMIT_DEFAULTS.timeoutMs;
  const started = performance.now();
  const envelope = (status: Envelope["status"], result: JsonValue, error: Envelope["error"]): Envelope => ({
    status,
    result,
    logs: [],
    error,
    stats: { wallMs: Math.round(performance.now() - started), cpuMs: 0, peakRssMb: 0, toolCalls: 1 },
    flags: [],
    truncated: false,
    isolation: { level, node: process.version, layers: { permissionModel: false, bubblewrap: false, prlimit: false, uid: null, cgroup: "none" } },
    artifacts: [],
    gate: emptyGate(),
  });
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const answer = await callTool(call.server, call.tool, call.arguments as JsonValue, AbortSignal.any([signal, timeout]));
    // Cleaned as the sandbox's host cleans a script's result (lib/sandbox/rpc-session.ts): no escape
    // sequences, control, bidi or tag characters reach the agent from either lane.
    const { value, changed } = sanitizeJson(answer as JsonValue);
    return { ...envelope("succeeded", value, null), flags: changed ? [CONTENT_NORMALIZED_FLAG] : [] };
  } catch (error) {
    // A cancel or a shutdown (`signal`) is told by executeRun, as for a script.
    if (timeout.aborted)
      return envelope("timed_out", null, { code: "TIMEOUT", message: `The call took longer than the run's ${timeoutMs} ms.`, untrusted: false });
    return envelope("failed", null, { code: "TOOL_ERROR", message: error instanceof Error ? error.message : String(error), untrusted: true });
  }
}

/** Kinds of check the analysis found the script declaring (facts.checks) that it never ran. */
function declaredChecksNotRun(run: Run, envelope: Envelope): string[] {
  const declared = runColumn(run, "facts");
  const ran = new Set(envelope.gate.checks.map((check) => check.kind));
  return (declared && "checks" in declared ? (declared.checks ?? []) : []).filter((kind) => !ran.has(kind));
}

/** The isolation level policy decided the run at (requests stored before the attribute existed were strict). */
function decidedIsolation(run: { id: string; policyRequest: unknown }): string {
  const request = runColumn(run, "policyRequest");
  const proposal = request?.entities.find((entity) => entity.uid.type === "Proposal");
  const level = proposal?.attrs.isolation;
  return typeof level === "string" ? level : "strict";
}

/**
 * Writes the end of execution: the terminal state, or pending_release when release policy holds
 * the result (its event seals every recorded call of the run, all attempts, once the run ends),
 * with the release decision and the tokens of its personal data.
 */
async function finish(
  { db, handOver }: Pick<ExecutorDeps, "db" | "handOver">,
  fence: RunFence,
  envelope: Envelope,
  pii: { scope: string; personal: readonly PiiValue[] },
  release: ReleaseDecision,
): Promise<void> {
  const held = { executorId: fence.executorId, attempt: fence.attempt };
  const now = new Date();
  const released = envelope.status === "succeeded" ? releaseOutcome(release, now) : null;
  const error = released?.error ?? envelope.error;
  try {
    await db.$transaction(async (tx) => {
      const artifacts = artifactRecords(envelope.artifacts);
      const written = await transitionRunReturning(tx, SYSTEM, {
        runId: fence.runId,
        from: "running",
        to: released?.status ?? envelope.status,
        where: held,
        data: {
          finishedAt: now,
          result: envelope.result === null ? undefined : (runColumnValue("result", envelope.result) as Prisma.InputJsonValue),
          error: error === null ? undefined : runColumnValue("error", error),
          releaseDecision: runColumnValue("releaseDecision", release),
          releaseExpiresAt: released?.releaseExpiresAt ?? null,
          execution: runColumnValue("execution", {
            ...envelope.stats,
            logs: envelope.logs,
            flags: envelope.flags,
            truncated: envelope.truncated,
            artifacts: artifacts.map(({ name, sizeBytes, sha256, mediaType }) => ({ name, sizeBytes, sha256, mediaType })),
            gate: envelope.gate,
          }),
          isolation: envelope.isolation.level,
        },
        audit: {
          errorCode: error?.code ?? null,
          resultDigest: jsonDigest(envelope.result as JsonValue),
          releaseDecision: release,
          isolation: envelope.isolation,
          stats: envelope.stats,
          flags: envelope.flags,
        },
      });
      if (!written) console.error(`run ${fence.runId}: no longer held by this executor when its result arrived; result dropped`);
      else {
        await storeArtifacts(tx, fence.runId, artifacts);
        await assignTokens(tx, pii.scope, fence.runId, pii.personal);
        if (handOver) afterCommit(() => handOver(written));
      }
    });
  } catch (error) {
    console.error(`run ${fence.runId}: the terminal write failed; ending it with STORAGE_REJECTED`, error);
    const message = `The run's outcome could not be stored: ${(error instanceof Error ? error.message : String(error)).slice(0, 300)}`;
    await db
      .$transaction((tx) =>
        transitionRun(tx, SYSTEM, {
          runId: fence.runId,
          from: "running",
          to: "failed",
          where: held,
          data: {
            finishedAt: new Date(),
            error: { code: "STORAGE_REJECTED", message: normalizeContent(message).value, untrusted: false },
            isolation: envelope.isolation.level,
          },
          audit: { errorCode: "STORAGE_REJECTED", attemptedStatus: envelope.status },
        }),
      )
      .catch((second: unknown) => console.error(`run ${fence.runId}: the minimal terminal write failed too; the maintenance sweep will end it`, second));
  }
}
