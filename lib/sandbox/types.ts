/**
 * The sandbox's public vocabulary: isolation levels, limits, the run request and the one result
 * envelope every outcome is reported in . Pure types and defaults, no I/O.
 */
import type { RunErrorCode } from "@/lib/errors";
import type { JsonValue } from "@/lib/untrusted/safe-json";
import type { CheckOutcome } from "./checks";

export const ISOLATION_LEVELS = ["strict", "permission-only"] as const;
export type IsolationLevel = (typeof ISOLATION_LEVELS)[number];

export type SandboxLimits = {
  /** Wall clock for the whole run, from job start; the process tree is killed after it. */
  timeoutMs: number;
  /** CPU time: the host ends the run (TIMEOUT) when its reading of the process tree reaches it; RLIMIT_CPU one second above is a backstop. */
  cpuSeconds: number;
  /** V8 old-space cap (--max-old-space-size). */
  heapMb: number;
  /** RLIMIT_DATA: bounds Buffers/ArrayBuffers too; allocation fails cleanly above it. */
  dataMb: number;
  /** RLIMIT_NOFILE. */
  maxOpenFiles: number;
  /** Everything the child may write to stdout; above it the run fails with OUTPUT_LIMIT. */
  maxStdoutBytes: number;
  /** Everything the child may write to stderr; above it the host stops reading and the run fails with OUTPUT_LIMIT. */
  maxStderrBytes: number;
  /** One frame (a line on stdout); a longer line fails the run with OUTPUT_LIMIT. */
  maxFrameBytes: number;
  /** Log text kept; the rest is dropped and the envelope marked truncated. */
  maxLogBytes: number;
  maxResultBytes: number;
  /** Total bytes of files under ./out/; also RLIMIT_FSIZE, the scratch's size (plus 1 MiB), and the scratch use the host counts as full. */
  maxArtifactBytes: number;
  /** Bytes of one tool call's arguments, and of one tool result sent back to the child. */
  maxRpcBytes: number;
  maxToolCalls: number;
  maxConcurrentToolCalls: number;
  /** Total bytes of staged inputs (they are copied). */
  maxInputBytes: number;
};

/**
 * The limits a run is decided on: policy sees them in its request, reviewers see them on the run
 * page, and the executor passes exactly these to the sandbox. The one source of their defaults.
 */
export type RunLimits = Pick<SandboxLimits, "timeoutMs" | "cpuSeconds" | "heapMb" | "maxToolCalls">;
export const RUN_LIMIT_DEFAULTS: RunLimits = { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 1_000 };

export const DEFAULT_LIMITS: SandboxLimits = {
  ...RUN_LIMIT_DEFAULTS,
  dataMb: 1024,
  maxOpenFiles: 64,
  maxStdoutBytes: 64 * 1024 * 1024,
  maxStderrBytes: 64 * 1024,
  maxFrameBytes: 24 * 1024 * 1024,
  maxLogBytes: 1024 * 1024,
  maxResultBytes: 1024 * 1024,
  maxArtifactBytes: 8 * 1024 * 1024,
  maxRpcBytes: 4 * 1024 * 1024,
  maxConcurrentToolCalls: 8,
  maxInputBytes: 256 * 1024 * 1024,
};

export type ScriptLanguage = "javascript" | "typescript";

export type StagedInput = { name: string; path: string };

export type ToolCallRecord = {
  id: number;
  server: string;
  tool: string;
  durationMs: number;
  outcome: "ok" | "error";
  /** Present when the call failed; untrusted text. */
  error?: string;
};

/** Calls one upstream tool. Throwing rejects the script's promise with the (sanitized) message. */
export type CallTool = (server: string, tool: string, args: JsonValue, signal: AbortSignal) => Promise<unknown>;

export type RunRequest = {
  code: string;
  language?: ScriptLanguage;
  inputs?: StagedInput[];
  /** The approved capability set, "server.tool". Anything else fails the run with CAPABILITY_DENIED. */
  allowedTools: string[];
  /** Every tool the script may name (stubs exist for these); defaults to allowedTools. */
  knownTools?: string[];
  callTool: CallTool;
  onToolCall?: (record: ToolCallRecord) => void;
  limits?: Partial<SandboxLimits>;
  /**
   * Per-tool call caps, "server.tool" → n, for tools that are not read-only. A call past its
   * tool's cap fails the run with BUDGET_EXCEEDED before it reaches callTool.
   */
  toolCallCaps?: Readonly<Record<string, number>>;
  signal?: AbortSignal;
};

export type LogLine = { level: "log" | "warn" | "error" | "debug"; text: string };

export type Artifact = { name: string; sizeBytes: number; sha256: string; base64: string };

/** check_failed: the script finished, and a check it declared failed; its result is kept, withheld from the agent. */
export type EnvelopeStatus = "succeeded" | "failed" | "timed_out" | "cancelled" | "check_failed";

/**
 * What the host learned about a result besides the result (lib/sandbox/checks.ts): the checks the
 * script declared and their verdicts, its assumptions, a declared partial result, and lineage —
 * the rows each tool returned (the lengths of the top-level arrays of each result) next to the
 * rows the script returned and the distinct rows its rowCount and sum checks covered.
 */
export type GateReport = {
  checks: CheckOutcome[];
  assumptions: string[];
  partial: string | null;
  rows: { read: Record<string, number>; returned: number | null; covered: number | null };
  /** Secrets the host redacted (lib/runs/gate.ts): where, and which kind — never the secret. */
  redactions: { where: string; kind: string }[];
};

/** The report of a run that declared nothing and read nothing (or never started). */
export function emptyGate(): GateReport {
  return { checks: [], assumptions: [], partial: null, rows: { read: {}, returned: null, covered: null }, redactions: [] };
}

export type IsolationReport = {
  level: IsolationLevel;
  node: string;
  layers: {
    permissionModel: boolean;
    bubblewrap: boolean;
    prlimit: boolean;
    uid: number | null;
    cgroup: string;
  };
};

export type Envelope = {
  status: EnvelopeStatus;
  result: JsonValue | null;
  logs: LogLine[];
  /** `detail`: the tail (≤ 4 KiB) of the script's stack trace or stderr, when it failed. */
  error: { code: RunErrorCode; message: string; untrusted: boolean; detail?: string } | null;
  stats: { wallMs: number; cpuMs: number; peakRssMb: number; toolCalls: number };
  flags: string[];
  truncated: boolean;
  isolation: IsolationReport;
  artifacts: Artifact[];
  gate: GateReport;
};
