/**
 * The host side of one run's channel (class RpcSession). Every frame from the child is hostile:
 * it is validated here, and policy lives here, not in the child.
 *
 * Guarantees: only tools in the approved capability set reach callTool (anything else fails the
 * run with CAPABILITY_DENIED); the tool-call quota, the per-tool caps and the RPC byte cap are
 * checked before a call is dispatched; at most maxConcurrentToolCalls calls run at once (the rest
 * wait in a queue); call ids must increase; call arguments are copied with depth and node caps;
 * the result is size-capped, parsed with depth and node caps and sanitized (flagged
 * content_normalized when that changed it; refused when it would merge two keys); artifacts are capped
 * in total and hashed; log text is sanitized and capped (the envelope is then marked truncated);
 * after the first outcome every later frame is ignored and queued calls are dropped; every
 * outcome becomes one Envelope, flagged for a missing result, swallowed or tool errors and
 * instruction-like text. A `done` frame is the script's word: it can end the run as
 * SCRIPT_ERROR, TOOL_ERROR (only after a tool call really failed) or MEMORY_LIMIT (an allocation
 * the kernel or V8 refused is seen only inside), never with a code that blames the host or a
 * limit the host measures (SANDBOX_UNAVAILABLE, OUTPUT_LIMIT for the scratch, TIMEOUT, …): such
 * claims are SCRIPT_ERROR. The artifacts cap is checked on the bytes the host received.
 *
 * Checks (./checks.ts) are decided here from the arguments the child sends: a run that finished
 * with a failed check is `check_failed` (CHECK_FAILED, naming the first one; the result is kept for
 * the audit log and withheld from the agent by the run's view). A run that finished after a failed
 * tool call, with calls it did not wait for, or after an error log, unless it declared
 * `checks.allowPartial(reason)`, is `succeeded` with SWALLOWED_FAILURE. The gate report (types.ts GateReport) carries the checks, assumptions, the
 * declared partial result and lineage — rows read per tool (the lengths of each result's
 * top-level arrays) — and the envelope is flagged `rows_unaccounted` when rowCount or sum checks
 * covered fewer distinct rows than the tools returned and no assumption says why.
 * Refuses: unknown frame types, malformed log/call/check/done frames, more than MAX_CHECKS checks or
 * MAX_ASSUMPTIONS assumptions, artifact names outside A-Z a-z 0-9 . _ - / (or with . or ..
 * segments), and results or artifacts above their caps.
 */
import { createHash } from "node:crypto";
import type { RunErrorCode } from "@/lib/errors";
import type { ProcessUsage } from "./process-stats";
import { parseSafeJson, toSafeJson, type JsonValue } from "@/lib/untrusted/safe-json";
import { looksLikeInstructions, sanitizeJson, sanitizeText } from "@/lib/untrusted/sanitize";
import { CONTENT_NORMALIZED_FLAG } from "@/lib/untrusted/storable-text";
import { evaluateCheck, isCheckKind, type CheckOutcome } from "./checks";
import type { Artifact, CallTool, Envelope, GateReport, IsolationReport, LogLine, SandboxLimits, ToolCallRecord } from "./types";

export const MAX_CHECKS = 500;
export const MAX_ASSUMPTIONS = 100;
const MAX_NOTE_CHARS = 2000;

/** Rows in a value, as lineage counts them: an array's length, or the lengths of an object's top-level arrays. */
export function rowsIn(value: unknown): number {
  if (Array.isArray(value)) return value.length;
  if (value === null || typeof value !== "object") return 0;
  return Object.values(value).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0);
}

/** The parts of a job the session enforces. */
export type SessionPolicy = {
  allowedTools: ReadonlySet<string>;
  /** Per-tool call caps ("server.tool" → n); tools without an entry have only maxToolCalls. */
  toolCallCaps: ReadonlyMap<string, number>;
  callTool: CallTool;
  onToolCall?: (record: ToolCallRecord) => void;
  limits: SandboxLimits;
  /** Columns the wrapper adds before the script's first line (./script.ts), taken off line 1's positions in a stack. */
  prefixColumns?: number;
};

/** What the session needs from its member: a way to answer the child, and the isolation to report. */
export type SessionChannel = { sendLine(line: string): void; readonly isolation: IsolationReport };

export type Outcome =
  { kind: "done"; frame: DoneFrame } | { kind: "fail"; code: RunErrorCode; message: string; untrusted: boolean; status?: Envelope["status"]; detail?: string };

type DoneFrame = Record<string, unknown>;

const LOG_LEVELS = new Set(["log", "warn", "error", "debug"]);
const ARTIFACT_NAME = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9._/-]{1,512}$/;

/** Host side of one run's channel: every frame is validated here; policy lives here, not in the child. */
/**
 * The last whole frame lines of a stack ("    at run (script.js:2:1)"), at most 4 KiB: where in
 * the script it failed. The message is left out (it is in the error already), and no line is cut,
 * so no fragment of a value (which would escape its personal-data token) is kept.
 */
function stackFrames(stack: string, prefixColumns: number): string {
  const kept: string[] = [];
  let size = 0;
  for (const line of stack.split("\n").reverse()) {
    if (!/^\s+at /.test(line)) continue;
    if (size + line.length + 1 > 4096) break;
    // Line 1 of the script shares its line with the wrapper: its columns are the script's once the wrapper's are taken off.
    kept.unshift(line.replace(/(\/script\.mjs:1:)(\d+)/, (_, at: string, column: string) => `${at}${Math.max(1, Number(column) - prefixColumns)}`));
    size += line.length + 1;
  }
  return kept.join("\n");
}

/** What a script may reach, said when Node's permission model refused it something else. */
const ACCESS_DENIED =
  "the sandbox refused it. A script reads its inputs (inputs.*) and the files it writes under ./out; it has no other files, no network, no child processes and no workers. Upstream tools are called as `await tools.<server>.<tool>(args)`.";

export class RpcSession {
  settle: (o: Outcome) => void = () => undefined;
  /** Set at the first outcome: later frames (even in the same chunk) are ignored, queued calls dropped. */
  closed = false;
  private readonly logs: LogLine[] = [];
  private logBytes = 0;
  private truncated = false;
  /** Log lines past maxLogBytes: not kept anywhere, and counted so the last kept line says so. */
  private droppedLogLines = 0;
  private lastId = 0;
  private calls = 0;
  private readonly callsPerTool = new Map<string, number>();
  private failedCalls = 0;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private readonly abort = new AbortController();
  private readonly checks: CheckOutcome[] = [];
  private readonly assumptions: string[] = [];
  private partial: string | null = null;
  private abandonedCalls = 0;
  private readonly rowsRead = new Map<string, number>();

  constructor(
    private readonly job: SessionPolicy,
    private readonly member: SessionChannel,
  ) {}

  onFrame(frame: Record<string, unknown>, bytes: number): void {
    if (this.closed) return;
    switch (frame.t) {
      case "log":
        return this.onLog(frame);
      case "call":
        return this.onCall(frame, bytes);
      case "deny":
        return this.settle({
          kind: "fail",
          code: "CAPABILITY_DENIED",
          message: `the script tried a refused ${sanitizeText(String(frame.what), 40)}: ${sanitizeText(String(frame.detail), 200)}`,
          untrusted: true,
        });
      case "check":
        return this.onCheck(frame, bytes);
      case "assume":
        return this.onNote(frame, "text");
      case "partial":
        return this.onNote(frame, "reason");
      case "done":
        // Calls still running or queued when the script finished are abandoned (the host aborts them).
        this.abandonedCalls = this.inFlight + this.queue.length;
        return this.settle({ kind: "done", frame });
      default:
        return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "the child sent a frame of an unknown type", untrusted: false });
    }
  }

  private onLog(frame: Record<string, unknown>): void {
    if (typeof frame.level !== "string" || !LOG_LEVELS.has(frame.level) || typeof frame.text !== "string") {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "malformed log frame", untrusted: false });
    }
    if (this.truncated) {
      this.droppedLogLines++;
      return;
    }
    const text = sanitizeText(frame.text, 64 * 1024);
    // Bytes as stored (UTF-8), not UTF-16 units: a line of 4-byte characters counts 4 a character.
    const bytes = Buffer.byteLength(text, "utf8");
    if (this.logBytes + bytes > this.job.limits.maxLogBytes) {
      this.truncated = true;
      this.droppedLogLines++;
      return;
    }
    this.logBytes += bytes;
    this.logs.push({ level: frame.level as LogLine["level"], text });
  }

  private onCheck(frame: Record<string, unknown>, bytes: number): void {
    const { id, kind, label } = frame;
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= this.lastId || !isCheckKind(kind) || typeof label !== "string") {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "malformed check frame (shape, kind or id)", untrusted: false });
    }
    this.lastId = id;
    if (this.checks.length >= MAX_CHECKS) {
      return this.settle({ kind: "fail", code: "BUDGET_EXCEEDED", message: `more than ${MAX_CHECKS} checks`, untrusted: false });
    }
    const name = sanitizeText(label, 200);
    let outcome: CheckOutcome;
    if (bytes > this.job.limits.maxRpcBytes) {
      outcome = { kind, label: name, ok: false, message: `its arguments exceed ${this.job.limits.maxRpcBytes} bytes` };
    } else if (!Array.isArray(frame.args)) {
      outcome = { kind, label: name, ok: false, message: "its arguments are not JSON-serializable" };
    } else {
      try {
        const args = toSafeJson(frame.args, { maxDepth: 32, maxNodes: 1_000_000 }) as JsonValue[];
        outcome = evaluateCheck(kind, name, args);
      } catch (error) {
        outcome = { kind, label: name, ok: false, message: `its arguments were refused: ${(error as Error).message}` };
      }
    }
    this.checks.push(outcome);
    this.member.sendLine(JSON.stringify({ t: "checked", id, ok: outcome.ok, message: outcome.message }));
  }

  private onNote(frame: Record<string, unknown>, field: "text" | "reason"): void {
    const value = frame[field];
    if (typeof value !== "string") return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: `malformed ${String(frame.t)} frame`, untrusted: false });
    const text = sanitizeText(value, MAX_NOTE_CHARS);
    if (frame.t === "partial") {
      this.partial = text;
      return;
    }
    if (this.assumptions.length >= MAX_ASSUMPTIONS) {
      return this.settle({ kind: "fail", code: "BUDGET_EXCEEDED", message: `more than ${MAX_ASSUMPTIONS} assumptions`, untrusted: false });
    }
    this.assumptions.push(text);
  }

  private onCall(frame: Record<string, unknown>, bytes: number): void {
    const { id, server, tool } = frame;
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= this.lastId || typeof server !== "string" || typeof tool !== "string") {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "malformed call frame (shape or call id)", untrusted: false });
    }
    this.lastId = id;
    const name = `${server}.${tool}`;
    if (!this.job.allowedTools.has(name)) {
      return this.settle({
        kind: "fail",
        code: "CAPABILITY_DENIED",
        message: `tool ${sanitizeText(name, 200)} is outside the approved capability set`,
        untrusted: true,
      });
    }
    if (++this.calls > this.job.limits.maxToolCalls) {
      return this.settle({ kind: "fail", code: "BUDGET_EXCEEDED", message: `more than ${this.job.limits.maxToolCalls} tool calls`, untrusted: false });
    }
    const cap = this.job.toolCallCaps.get(name);
    const callsOfTool = (this.callsPerTool.get(name) ?? 0) + 1;
    this.callsPerTool.set(name, callsOfTool);
    if (cap !== undefined && callsOfTool > cap) {
      return this.settle({
        kind: "fail",
        code: "BUDGET_EXCEEDED",
        message: `tool ${sanitizeText(name, 200)} was called more than the ${cap} time(s) that were approved`,
        untrusted: false,
      });
    }
    if (bytes > this.job.limits.maxRpcBytes) {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: `a call frame exceeded ${this.job.limits.maxRpcBytes} bytes`, untrusted: false });
    }
    let args: JsonValue;
    try {
      args = toSafeJson(frame.args, { maxDepth: 32, maxNodes: 100_000 });
    } catch (error) {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: `call arguments refused: ${(error as Error).message}`, untrusted: false });
    }
    const dispatch = () => void this.dispatch(id, server, tool, args);
    if (this.inFlight < this.job.limits.maxConcurrentToolCalls) dispatch();
    else this.queue.push(dispatch);
  }

  private async dispatch(id: number, server: string, tool: string, args: JsonValue): Promise<void> {
    this.inFlight++;
    const t0 = performance.now();
    let reply: string;
    let error: string | undefined;
    try {
      const value = await this.job.callTool(server, tool, args, this.abort.signal);
      const name = `${server}.${tool}`;
      this.rowsRead.set(name, (this.rowsRead.get(name) ?? 0) + rowsIn(value));
      reply = JSON.stringify({ t: "result", id, ok: true, value: value === undefined ? null : value });
      if (reply.length > this.job.limits.maxRpcBytes) {
        error = `the tool result exceeds ${this.job.limits.maxRpcBytes} bytes`;
      }
    } catch (e) {
      error = sanitizeText(e instanceof Error ? e.message : String(e), 4000);
    }
    if (error !== undefined) {
      this.failedCalls++;
      reply = JSON.stringify({ t: "result", id, ok: false, error });
    }
    this.inFlight--;
    const durationMs = performance.now() - t0;
    this.job.onToolCall?.({ id, server, tool, durationMs, outcome: error === undefined ? "ok" : "error", ...(error !== undefined ? { error } : {}) });
    if (!this.closed) {
      this.member.sendLine(reply!);
      this.queue.shift()?.();
    }
  }

  abortCalls(): void {
    this.abort.abort();
    this.queue.length = 0;
  }

  private doneOutcome(frame: DoneFrame): { result: JsonValue | null; sanitized: boolean; artifacts: Artifact[]; returned: boolean; error?: Outcome } {
    const fail = (code: RunErrorCode, message: string, untrusted = false, detail?: string) => ({
      result: null,
      sanitized: false,
      artifacts: [],
      returned: false,
      error: { kind: "fail" as const, code, message, untrusted, ...(detail ? { detail } : {}) },
    });
    if (frame.ok === false) {
      const e = (frame.error ?? {}) as Record<string, unknown>;
      const name = sanitizeText(String(e.name ?? "Error"), 200);
      const code = typeof e.code === "string" ? sanitizeText(e.code, 100) : "";
      const message = sanitizeText(String(e.message ?? ""), 8000);
      const text = `${name}${code ? ` [${code}]` : ""}: ${message}`;
      const stack = typeof e.stack === "string" ? stackFrames(sanitizeText(e.stack), this.job.prefixColumns ?? 0) : "";
      if (code === "ERR_MEMORY_ALLOCATION_FAILED" || /allocation failed|Failed to allocate memory|out of memory|Array buffer allocation/i.test(message)) {
        return fail("MEMORY_LIMIT", text, true, stack);
      }
      if (name === "ToolError" && this.failedCalls > 0) return fail("TOOL_ERROR", text, true, stack);
      // Node's permission model refused: its text advises a command-line flag, which a script cannot use.
      if (code === "ERR_ACCESS_DENIED") return fail("CAPABILITY_DENIED", `${name} [${code}]: ${ACCESS_DENIED}`, true, stack);
      return fail("SCRIPT_ERROR", text, true, stack);
    }
    if (frame.ok !== true) return fail("RPC_VIOLATION", "malformed done frame");
    let result: JsonValue | null = null;
    let sanitized = false;
    const returned = frame.result !== undefined;
    if (returned) {
      if (typeof frame.result !== "string") return fail("RPC_VIOLATION", "malformed result");
      if (Buffer.byteLength(frame.result) > this.job.limits.maxResultBytes)
        return fail("OUTPUT_LIMIT", `the result exceeds ${this.job.limits.maxResultBytes} bytes`);
      try {
        ({ value: result, changed: sanitized } = sanitizeJson(parseSafeJson(frame.result, { maxDepth: 64, maxNodes: 1_000_000 })));
      } catch (error) {
        return fail("OUTPUT_LIMIT", `the result was refused: ${(error as Error).message}`);
      }
    }
    if (!Array.isArray(frame.artifacts)) return fail("RPC_VIOLATION", "malformed artifacts");
    const artifacts: Artifact[] = [];
    let total = 0;
    for (const a of frame.artifacts as unknown[]) {
      const { name, b64 } = (a ?? {}) as Record<string, unknown>;
      if (typeof name !== "string" || typeof b64 !== "string" || !ARTIFACT_NAME.test(name)) {
        return fail("RPC_VIOLATION", "an artifact under ./out/ has a name outside A-Z a-z 0-9 . _ - / (or a malformed entry)");
      }
      const data = Buffer.from(b64, "base64");
      total += data.length;
      if (total > this.job.limits.maxArtifactBytes) return fail("OUTPUT_LIMIT", `files under ./out/ exceed ${this.job.limits.maxArtifactBytes} bytes`);
      artifacts.push({ name, sizeBytes: data.length, sha256: createHash("sha256").update(data).digest("hex"), base64: data.toString("base64") });
    }
    return { result, sanitized, artifacts, returned };
  }

  envelope(outcome: Outcome, started: number, usage: ProcessUsage | null): Envelope {
    const stats = { wallMs: Math.round(performance.now() - started), cpuMs: usage?.cpuMs ?? 0, peakRssMb: usage?.peakRssMb ?? 0, toolCalls: this.calls };
    const flags: string[] = [];
    let status: Envelope["status"] = "failed";
    let error: Envelope["error"] = null;
    let result: JsonValue | null = null;
    let artifacts: Artifact[] = [];
    const done = outcome.kind === "done" ? this.doneOutcome(outcome.frame) : null;
    const failure = done ? done.error : outcome;
    if (done && !failure) {
      status = "succeeded";
      result = done.result;
      artifacts = done.artifacts;
      const swallowed = this.failedCalls > 0 || this.abandonedCalls > 0 || this.logs.some((l) => l.level === "error");
      if (!done.returned) flags.push("no_result");
      // Control, bidi and zero-width characters were taken out of the result's text: it is not exactly what the script returned.
      if (done.sanitized) flags.push(CONTENT_NORMALIZED_FLAG);
      if (swallowed) flags.push("swallowed_errors");
      if (this.abandonedCalls > 0) flags.push("abandoned_calls");
      const failed = this.checks.find((c) => !c.ok);
      if (failed) {
        status = "check_failed";
        const more = this.checks.filter((c) => !c.ok).length - 1;
        error = {
          code: "CHECK_FAILED",
          message: `check "${failed.label}" (${failed.kind}) failed: ${failed.message}${more > 0 ? `; ${more} more check(s) failed` : ""}`,
          untrusted: true,
        };
      } else if (swallowed && this.partial === null) {
        const what = [
          this.failedCalls > 0 ? `${this.failedCalls} failed tool call(s)` : "",
          this.abandonedCalls > 0 ? `${this.abandonedCalls} tool call(s) it did not wait for` : "",
        ].filter(Boolean);
        error = {
          code: "SWALLOWED_FAILURE",
          message: `the script finished after ${what.length > 0 ? what.join(" and ") : "logging an error"} and did not say its result is partial`,
          untrusted: false,
        };
      }
    } else if (failure && failure.kind === "fail") {
      status = failure.status ?? "failed";
      error = { code: failure.code, message: failure.message, untrusted: failure.untrusted, ...(failure.detail ? { detail: failure.detail } : {}) };
    }
    if (this.failedCalls > 0 && (status === "succeeded" || status === "check_failed")) flags.push("tool_errors");
    const gate = this.gate(result);
    if (this.checks.some((c) => c.rows !== undefined) && (gate.rows.covered ?? 0) < totalRows(gate) && this.assumptions.length === 0)
      flags.push("rows_unaccounted");
    const texts = [...this.logs.map((l) => l.text), error?.untrusted ? error.message : "", result === null ? "" : JSON.stringify(result)];
    if (texts.some((t) => looksLikeInstructions(t))) flags.push("instruction_like_text");
    const logs: LogLine[] =
      this.droppedLogLines > 0
        ? [
            ...this.logs,
            {
              level: "warn",
              text: `… ${this.droppedLogLines} more log line(s) were not kept: the logs reached their limit of ${this.job.limits.maxLogBytes} bytes`,
            },
          ]
        : this.logs;
    return { status, result, logs, error, stats, flags, truncated: this.truncated, isolation: this.member.isolation, artifacts, gate };
  }

  private gate(result: JsonValue | null): GateReport {
    const covered = new Map<string, number>();
    for (const check of this.checks) if (check.rowsKey !== undefined) covered.set(check.rowsKey, check.rows ?? 0);
    return {
      checks: [...this.checks],
      assumptions: [...this.assumptions],
      partial: this.partial,
      rows: {
        read: Object.fromEntries(this.rowsRead),
        returned: result === null ? null : rowsIn(result),
        covered: covered.size > 0 ? [...covered.values()].reduce((a, b) => a + b, 0) : null,
      },
      redactions: [],
    };
  }
}

function totalRows(gate: GateReport): number {
  return Object.values(gate.rows.read).reduce((a, b) => a + b, 0);
}
