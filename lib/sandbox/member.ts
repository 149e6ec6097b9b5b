/**
 * One sandbox process, used for exactly one run and then destroyed (the warm pool keeps a few
 * started ones waiting for their job).
 *
 * Layers (DESIGN.md step 7), all set up here on the host side:
 *  - L0: Node >= 26 with --permission: read only the bootstrap, the allowlisted packages, the
 *    member's code/inputs and its scratch; write only the scratch; no child processes, workers,
 *    addons, WASI, inspector, network; no code generation from strings; `__proto__` throws;
 *    heap cap; SIGUSR1 disabled; empty environment; only fds 0-2 (libuv marks every other fd
 *    close-on-exec).
 *  - L1 (`strict`): bubblewrap with every namespace unshared, --die-with-parent, --clearenv,
 *    --new-session, a root containing only the node binary and its shared libraries, the
 *    bootstrap, the packages, code and inputs read-only, a size-capped tmpfs scratch; no /proc,
 *    no /dev, no host sockets. bwrap itself is started as uid/gid 65534 when we are root, so the
 *    sandbox is unprivileged on the host as well as inside the user namespace.
 *  - L2: prlimit (nofile, fsize, core=0, cpu, data); wall-clock kill of the process group;
 *    byte caps on every stream; tool-call quota, per-tool caps and concurrency cap.
 * Every frame from the child is hostile (see RpcSession). A missing layer is an error
 * (SandboxUnavailable), never a downgrade.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { RunErrorCode } from "@/lib/errors";
import { BOOTSTRAP_PATH, EMPTY_ENV, REPO_ROOT, SANDBOX_GID, SANDBOX_UID, detectHost, type HostFacts } from "./runtime";
import { createMemberDirs, removeMemberDirs, resolvePackages, stageInputs, type MemberDirs } from "./stage";
import { ALLOWED_BUILTINS } from "./script";
import { parseSafeJson, toSafeJson, type JsonValue } from "./safe-json";
import { looksLikeInstructions, sanitizeJson, sanitizeText } from "./sanitize";
import type { Artifact, CallTool, Envelope, IsolationLevel, IsolationReport, LogLine, SandboxLimits, StagedInput, ToolCallRecord } from "./types";

export class SandboxUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SandboxUnavailable";
  }
}

/** Limits fixed when the process starts (a pool's members share them). */
export const SPAWN_LIMIT_KEYS = ["cpuSeconds", "heapMb", "dataMb", "maxOpenFiles", "maxArtifactBytes"] as const;

export type MemberOptions = {
  isolation: IsolationLevel;
  limits: SandboxLimits;
  packages: readonly string[];
  nodePath?: string;
};

export type MemberJob = {
  module: string;
  inputs: readonly StagedInput[];
  allowedTools: ReadonlySet<string>;
  /** Per-tool call caps ("server.tool" → n); tools without an entry have only maxToolCalls. */
  toolCallCaps: ReadonlyMap<string, number>;
  knownTools: readonly string[];
  callTool: CallTool;
  onToolCall?: (record: ToolCallRecord) => void;
  limits: SandboxLimits;
  signal?: AbortSignal;
};

const INSIDE = {
  node: "/airlock/node",
  bootstrap: "/airlock/runner/bootstrap.mjs",
  runner: "/airlock/runner",
  modules: "/airlock/node_modules",
  code: "/airlock/code",
  inputs: "/airlock/inputs",
  work: "/airlock/work",
};

type Layout = { code: string; inputs: string; work: string; runner: string; packageBase: string; packageDirs: string[] };

function buildCommand(facts: HostFacts, opts: MemberOptions, dirs: MemberDirs): { file: string; args: string[]; cwd: string; layout: Layout } {
  const { limits } = opts;
  const packages = resolvePackages(opts.packages);
  const strict = opts.isolation === "strict";
  const layout: Layout = strict
    ? {
        code: INSIDE.code,
        inputs: INSIDE.inputs,
        work: INSIDE.work,
        runner: INSIDE.runner,
        packageBase: pathToFileURL("/airlock/").href,
        packageDirs: packages.length > 0 ? [INSIDE.modules] : [],
      }
    : {
        code: dirs.code,
        inputs: dirs.inputs,
        work: dirs.work,
        runner: dirname(BOOTSTRAP_PATH),
        packageBase: pathToFileURL(`${REPO_ROOT}/`).href,
        packageDirs: packages.map((p) => p.dir),
      };
  const node = [
    strict ? INSIDE.node : facts.nodePath,
    "--permission",
    ...[layout.runner, layout.code, layout.inputs, layout.work, ...layout.packageDirs].map((p) => `--allow-fs-read=${p}`),
    `--allow-fs-write=${layout.work}`,
    "--disallow-code-generation-from-strings",
    "--disable-proto=throw",
    "--disable-sigusr1",
    "--no-addons",
    `--max-old-space-size=${limits.heapMb}`,
    strict ? INSIDE.bootstrap : BOOTSTRAP_PATH,
  ];
  const prlimit = [
    `--nofile=${limits.maxOpenFiles}`,
    `--fsize=${limits.maxArtifactBytes}`,
    "--core=0",
    `--cpu=${limits.cpuSeconds}`,
    `--data=${limits.dataMb * 1024 * 1024}`,
    "--",
  ];
  if (!strict) return { file: facts.prlimitPath!, args: [...prlimit, ...node], cwd: dirs.work, layout };
  const bwrap = ["--unshare-all", "--die-with-parent", "--clearenv", "--new-session", "--hostname", "sandbox"];
  bwrap.push("--uid", String(SANDBOX_UID), "--gid", String(SANDBOX_GID));
  for (const [src, dest] of facts.libraryBinds) bwrap.push("--ro-bind", src, dest);
  bwrap.push("--ro-bind", facts.nodePath, INSIDE.node, "--ro-bind", BOOTSTRAP_PATH, INSIDE.bootstrap);
  for (const p of packages) bwrap.push("--ro-bind", p.dir, `${INSIDE.modules}/${p.name}`);
  bwrap.push("--ro-bind", dirs.code, INSIDE.code, "--ro-bind", dirs.inputs, INSIDE.inputs);
  // Scratch: the artifacts cap plus room for the out/ directory entries.
  bwrap.push("--size", String(limits.maxArtifactBytes + 1024 * 1024), "--tmpfs", INSIDE.work, "--chdir", INSIDE.work);
  return { file: facts.prlimitPath!, args: [...prlimit, facts.bwrapPath!, ...bwrap, ...node], cwd: dirs.root, layout };
}

export function isolationReport(facts: HostFacts | null, level: IsolationLevel): IsolationReport {
  return {
    level,
    node: facts?.nodeVersion ?? "unavailable",
    layers: {
      permissionModel: facts !== null,
      bubblewrap: level === "strict" && facts?.bwrapPath != null,
      prlimit: facts?.prlimitPath != null,
      uid: facts ? (facts.canDropPrivileges ? SANDBOX_UID : (process.getuid?.() ?? null)) : null,
      cgroup: facts?.cgroup ?? "not-delegated",
    },
  };
}

export async function checkAvailable(opts: MemberOptions): Promise<HostFacts> {
  let facts: HostFacts;
  try {
    facts = await detectHost(opts.nodePath);
  } catch (cause) {
    throw new SandboxUnavailable((cause as Error).message, { cause });
  }
  if (!facts.prlimitPath) throw new SandboxUnavailable("prlimit is not installed: resource limits (L2) cannot be applied");
  if (opts.isolation === "strict" && !facts.bwrapPath) {
    throw new SandboxUnavailable("isolation 'strict' needs bubblewrap (bwrap), which is missing or cannot create namespaces here");
  }
  return facts;
}

type Outcome = { kind: "done"; frame: DoneFrame } | { kind: "fail"; code: RunErrorCode; message: string; untrusted: boolean; status?: Envelope["status"] };

type DoneFrame = Record<string, unknown>;

const CLK_TCK = 100;

/** Sum of CPU time and the largest peak RSS over a process and its descendants, from /proc. */
function procTreeStats(rootPid: number): { cpuMs: number; peakRssMb: number } {
  let cpuTicks = 0;
  let peakKb = 0;
  const visit = (pid: number, depth: number) => {
    if (depth > 8) return;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      cpuTicks += Number(fields[11]) + Number(fields[12]);
      const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      // Only main threads fork here (prlimit→bwrap→bwrap init→node; node may not spawn).
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
      for (const child of children ? children.split(" ") : []) visit(Number(child), depth + 1);
    } catch {
      // the process is gone
    }
  };
  visit(rootPid, 0);
  return { cpuMs: Math.round((cpuTicks * 1000) / CLK_TCK), peakRssMb: Math.round(peakKb / 1024) };
}

const LOG_LEVELS = new Set(["log", "warn", "error", "debug"]);
const ARTIFACT_NAME = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9._/-]{1,512}$/;

export class SandboxMember {
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;
  private readonly dirs: MemberDirs;
  private readonly layout: Layout;
  private used = false;
  private dead = false;
  private readyResolve!: () => void;
  private readyReject!: (e: Error) => void;
  private stderr = "";
  private frameHandler: ((frame: Record<string, unknown>, bytes: number) => void) | null = null;
  private streamFailure: ((code: RunErrorCode, message: string) => void) | null = null;
  private stdoutBytes = 0;
  private earlyFrames: Record<string, unknown>[] = [];
  private readySeen = false;

  private constructor(
    private readonly facts: HostFacts,
    private readonly opts: MemberOptions,
  ) {
    this.dirs = createMemberDirs(facts.canDropPrivileges);
    const cmd = buildCommand(facts, opts, this.dirs);
    this.layout = cmd.layout;
    this.ready = new Promise<void>((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    this.ready.catch(() => undefined);
    this.child = spawn(cmd.file, cmd.args, {
      cwd: cmd.cwd,
      env: EMPTY_ENV,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
      ...(facts.canDropPrivileges ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {}),
    });
    this.exited = new Promise<void>((resolve) => this.child.once("close", () => resolve()));
    // A member that dies unused (start-up failure, killed while waiting) cleans up after itself.
    void this.exited.then(() => {
      if (!this.used) removeMemberDirs(this.dirs);
    });
    this.child.once("exit", () => {
      this.dead = true;
      this.readyReject(new SandboxUnavailable(`sandbox exited during start-up: ${sanitizeText(this.stderr, 2000)}`));
    });
    this.child.once("error", (error) => {
      this.dead = true;
      this.readyReject(new SandboxUnavailable(`sandbox could not start: ${error.message}`, { cause: error }));
    });
    this.child.stdin!.on("error", () => undefined);
    this.child.stderr!.on("data", (chunk: Buffer) => {
      if (this.stderr.length < opts.limits.maxStderrBytes) this.stderr += chunk.toString("utf8").slice(0, opts.limits.maxStderrBytes - this.stderr.length);
    });
    this.readLines();
  }

  static async create(opts: MemberOptions): Promise<SandboxMember> {
    const facts = await checkAvailable(opts);
    return new SandboxMember(facts, opts);
  }

  get alive(): boolean {
    return !this.dead;
  }

  get isolation(): IsolationReport {
    return isolationReport(this.facts, this.opts.isolation);
  }

  /** Splits stdout into lines without ever holding more than maxFrameBytes of one line. */
  private readLines(): void {
    const { maxFrameBytes, maxStdoutBytes } = this.opts.limits;
    let parts: Buffer[] = [];
    let partBytes = 0;
    let stopped = false;
    const overflow = (message: string) => {
      stopped = true;
      parts = [];
      if (this.streamFailure) this.streamFailure("OUTPUT_LIMIT", message);
      else this.kill();
    };
    this.child.stdout!.on("data", (chunk: Buffer) => {
      if (stopped) return;
      this.stdoutBytes += chunk.length;
      if (this.stdoutBytes > maxStdoutBytes) return overflow(`the script wrote more than ${maxStdoutBytes} bytes to stdout`);
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, nl);
        const bytes = partBytes + piece.length;
        if (bytes > maxFrameBytes) return overflow(`a frame exceeded ${maxFrameBytes} bytes`);
        const line = partBytes === 0 ? piece.toString("utf8") : Buffer.concat([...parts, piece]).toString("utf8");
        parts = [];
        partBytes = 0;
        start = nl + 1;
        this.onLine(line, bytes);
      }
      if (start < chunk.length) {
        parts.push(chunk.subarray(start));
        partBytes += chunk.length - start;
        if (partBytes > maxFrameBytes) return overflow(`a frame exceeded ${maxFrameBytes} bytes`);
      }
    });
  }

  private onLine(line: string, bytes: number): void {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      return this.violation("a line on stdout is not a JSON frame");
    }
    if (frame === null || typeof frame !== "object" || Array.isArray(frame) || typeof (frame as { t?: unknown }).t !== "string") {
      return this.violation("a frame is not an object with a string 't'");
    }
    const f = frame as Record<string, unknown>;
    if (f.t === "ready" && !this.readySeen) {
      this.readySeen = true;
      this.readyResolve();
      return;
    }
    if (this.frameHandler) this.frameHandler(f, bytes);
    else if (this.earlyFrames.length < 4) this.earlyFrames.push(f);
    else this.kill();
  }

  private violation(message: string): void {
    if (this.streamFailure) this.streamFailure("RPC_VIOLATION", message);
    else this.kill();
  }

  kill(): void {
    if (this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    this.dead = true;
  }

  /** Kills the process tree and removes the member's directories. */
  async destroy(): Promise<void> {
    this.kill();
    await this.exited;
    removeMemberDirs(this.dirs);
  }

  /** Runs one job. Never throws: every outcome is an envelope. The member is destroyed afterwards. */
  async run(job: MemberJob): Promise<Envelope> {
    if (this.used) throw new Error("a sandbox member runs exactly one job");
    this.used = true;
    const started = performance.now();
    const session = new RpcSession(job, this);
    let names: string[];
    try {
      writeFileSync(join(this.dirs.code, "script.mjs"), job.module, { mode: 0o444, flag: "wx" });
      names = stageInputs(this.dirs.inputs, job.inputs, job.limits.maxInputBytes);
    } catch (error) {
      await this.destroy();
      return session.envelope(
        { kind: "fail", code: "SANDBOX_UNAVAILABLE", message: `staging failed: ${(error as Error).message}`, untrusted: false },
        started,
        null,
      );
    }
    const outcome = await new Promise<Outcome>((resolve) => {
      let settled = false;
      const settle = (o: Outcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        job.signal?.removeEventListener("abort", onAbort);
        resolve(o);
      };
      session.settle = (o) => {
        session.closed = true;
        settle(o);
      };
      const timer = setTimeout(
        () =>
          session.settle({
            kind: "fail",
            code: "TIMEOUT",
            message: `the run exceeded its ${job.limits.timeoutMs} ms wall-clock limit`,
            untrusted: false,
            status: "timed_out",
          }),
        job.limits.timeoutMs,
      );
      const onAbort = () => session.settle({ kind: "fail", code: "CANCELLED", message: "the run was cancelled", untrusted: false, status: "cancelled" });
      if (job.signal?.aborted) return onAbort();
      job.signal?.addEventListener("abort", onAbort, { once: true });
      this.streamFailure = (code, message) => session.settle({ kind: "fail", code, message, untrusted: false });
      this.frameHandler = (frame, bytes) => session.onFrame(frame, bytes);
      for (const f of this.earlyFrames.splice(0)) session.onFrame(f, 0);
      // "close" (not "exit"): every frame and all of stderr have been read by then.
      void this.exited.then(() => session.settle(this.exitOutcome(this.child.exitCode, this.child.signalCode)));
      this.send({
        t: "job",
        script: join(this.layout.code, "script.mjs"),
        inputsDir: this.layout.inputs,
        inputs: names,
        outDir: join(this.layout.work, "out"),
        tools: catalogOf(job.knownTools),
        packages: Object.fromEntries(this.opts.packages.map((name) => [name, this.layout.packageBase])),
        builtins: ALLOWED_BUILTINS,
        maxLogChars: Math.min(job.limits.maxLogBytes, 64 * 1024),
        maxArtifactBytes: job.limits.maxArtifactBytes,
      });
    });
    const usage = this.child.pid !== undefined ? procTreeStats(this.child.pid) : null;
    session.abortCalls();
    // Kill now; the directories go once the process tree is gone (not on the caller's clock).
    void this.destroy();
    return session.envelope(outcome, started, usage);
  }

  private exitOutcome(code: number | null, signal: NodeJS.Signals | null): Outcome {
    const stderr = this.stderr;
    if (/heap out of memory|Reached heap limit|allocation failed/i.test(stderr)) {
      return { kind: "fail", code: "MEMORY_LIMIT", message: "the script exceeded its memory limit", untrusted: false };
    }
    // bwrap reports a signal-killed child as 128 + signo.
    if (signal === "SIGXCPU" || code === 128 + 24) {
      return { kind: "fail", code: "TIMEOUT", message: "the script exceeded its CPU-time limit", untrusted: false, status: "timed_out" };
    }
    if (signal === "SIGXFSZ" || code === 128 + 25) {
      return { kind: "fail", code: "OUTPUT_LIMIT", message: "the script exceeded the file-size limit", untrusted: false };
    }
    const detail = sanitizeText(stderr, 2000).trim();
    return {
      kind: "fail",
      code: "SCRIPT_ERROR",
      message: `the sandbox exited (${signal ?? `code ${code}`}) before reporting a result${detail ? `: ${detail}` : ""}`,
      untrusted: detail.length > 0,
    };
  }

  send(frame: unknown): void {
    this.sendLine(JSON.stringify(frame));
  }

  sendLine(line: string): void {
    if (this.dead) return;
    // A child that stops reading its tool results must not make the host buffer them forever.
    if (this.child.stdin!.writableLength > this.opts.limits.maxRpcBytes * 4) {
      this.streamFailure?.("RPC_VIOLATION", "the sandbox stopped reading tool results");
      return;
    }
    this.child.stdin!.write(`${line}\n`);
  }
}

function catalogOf(tools: readonly string[]): Record<string, string[]> {
  const catalog: Record<string, string[]> = Object.create(null);
  for (const full of tools) {
    const dot = full.indexOf(".");
    if (dot <= 0) continue;
    (catalog[full.slice(0, dot)] ??= []).push(full.slice(dot + 1));
  }
  return catalog;
}

/** Host side of one run's channel: every frame is validated here; policy lives here, not in the child. */
class RpcSession {
  settle: (o: Outcome) => void = () => undefined;
  /** Set at the first outcome: later frames (even in the same chunk) are ignored, queued calls dropped. */
  closed = false;
  private readonly logs: LogLine[] = [];
  private logBytes = 0;
  private truncated = false;
  private lastId = 0;
  private calls = 0;
  private readonly callsPerTool = new Map<string, number>();
  private failedCalls = 0;
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private readonly abort = new AbortController();

  constructor(
    private readonly job: MemberJob,
    private readonly member: SandboxMember,
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
      case "done":
        return this.settle({ kind: "done", frame });
      default:
        return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "the child sent a frame of an unknown type", untrusted: false });
    }
  }

  private onLog(frame: Record<string, unknown>): void {
    if (typeof frame.level !== "string" || !LOG_LEVELS.has(frame.level) || typeof frame.text !== "string") {
      return this.settle({ kind: "fail", code: "RPC_VIOLATION", message: "malformed log frame", untrusted: false });
    }
    if (this.truncated) return;
    const text = sanitizeText(frame.text, 64 * 1024);
    if (this.logBytes + text.length > this.job.limits.maxLogBytes) {
      this.truncated = true;
      return;
    }
    this.logBytes += text.length;
    this.logs.push({ level: frame.level as LogLine["level"], text });
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
    const dispatch = () => this.dispatch(id, server, tool, args);
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

  private doneOutcome(frame: DoneFrame): { result: JsonValue | null; artifacts: Artifact[]; returned: boolean; error?: Outcome } {
    const fail = (code: RunErrorCode, message: string, untrusted = false) => ({
      result: null,
      artifacts: [],
      returned: false,
      error: { kind: "fail" as const, code, message, untrusted },
    });
    if (frame.ok === false) {
      const e = (frame.error ?? {}) as Record<string, unknown>;
      const name = sanitizeText(String(e.name ?? "Error"), 200);
      const code = typeof e.code === "string" ? sanitizeText(e.code, 100) : "";
      const message = sanitizeText(String(e.message ?? ""), 8000);
      const text = `${name}${code ? ` [${code}]` : ""}: ${message}`;
      if (code === "NO_PERMISSION_MODEL" || code === "PERMISSION_TOO_WIDE") return fail("SANDBOX_UNAVAILABLE", `the sandbox refused to start: ${text}`, true);
      if (code === "ENOSPC" || code === "EFBIG") return fail("OUTPUT_LIMIT", text, true);
      if (code === "ERR_MEMORY_ALLOCATION_FAILED" || /allocation failed|Failed to allocate memory|out of memory|Array buffer allocation/i.test(message)) {
        return fail("MEMORY_LIMIT", text, true);
      }
      if (name === "ToolError" && this.failedCalls > 0) return fail("TOOL_ERROR", text, true);
      return fail("SCRIPT_ERROR", text, true);
    }
    if (frame.ok !== true) return fail("RPC_VIOLATION", "malformed done frame");
    let result: JsonValue | null = null;
    const returned = frame.result !== undefined;
    if (returned) {
      if (typeof frame.result !== "string") return fail("RPC_VIOLATION", "malformed result");
      if (Buffer.byteLength(frame.result) > this.job.limits.maxResultBytes)
        return fail("OUTPUT_LIMIT", `the result exceeds ${this.job.limits.maxResultBytes} bytes`);
      try {
        result = sanitizeJson(parseSafeJson(frame.result, { maxDepth: 64, maxNodes: 1_000_000 }));
      } catch (error) {
        return fail("OUTPUT_LIMIT", `the result was refused: ${(error as Error).message}`);
      }
    }
    if (frame.artifactsOverLimit === true) return fail("OUTPUT_LIMIT", `files under ./out/ exceed ${this.job.limits.maxArtifactBytes} bytes`);
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
    return { result, artifacts, returned };
  }

  envelope(outcome: Outcome, started: number, usage: { cpuMs: number; peakRssMb: number } | null): Envelope {
    const stats = { wallMs: Math.round(performance.now() - started), cpuMs: usage?.cpuMs ?? 0, peakRssMb: usage?.peakRssMb ?? 0, toolCalls: this.calls };
    const flags: string[] = [];
    let status: Envelope["status"] = "failed";
    let error: Envelope["error"] = null;
    let result: JsonValue | null = null;
    let artifacts: Artifact[] = [];
    if (outcome.kind === "done") {
      const done = this.doneOutcome(outcome.frame);
      if (done.error && done.error.kind === "fail") {
        error = { code: done.error.code, message: done.error.message, untrusted: done.error.untrusted };
      } else {
        status = "succeeded";
        result = done.result;
        artifacts = done.artifacts;
        if (!done.returned) {
          flags.push("no_result");
          if (this.failedCalls > 0 || this.logs.some((l) => l.level === "error")) flags.push("swallowed_errors");
        }
      }
    } else {
      status = outcome.status ?? "failed";
      error = { code: outcome.code, message: outcome.message, untrusted: outcome.untrusted };
    }
    if (this.failedCalls > 0 && status === "succeeded") flags.push("tool_errors");
    const texts = [...this.logs.map((l) => l.text), error?.untrusted ? error.message : "", result === null ? "" : JSON.stringify(result)];
    if (texts.some((t) => looksLikeInstructions(t))) flags.push("instruction_like_text");
    return { status, result, logs: this.logs, error, stats, flags, truncated: this.truncated, isolation: this.member.isolation, artifacts };
  }
}
