/**
 * One sandbox process, used for exactly one run and then destroyed (the warm pool keeps a few
 * started ones waiting for their job). This module runs its life on the host side: spawn (with
 * the command from member-command.ts, where the isolation layers are chosen), stdout/stderr
 * framing, run(job), destroy.
 *
 * Guarantees: a job's outcome is always an envelope, built by RpcSession, which validates every
 * frame from the hostile child; the host-side part of L2: a wall-clock kill of the whole process
 * group (SIGKILL), byte caps on stdout and each frame (OUTPUT_LIMIT, see stdout-lines.ts), a cap
 * on the stderr kept, and a cap on tool results the child leaves unread (RPC_VIOLATION); the
 * process tree is killed at the end of every run and the member's directories are removed once it
 * is gone, also for a member that dies unused.
 * Refuses: a second job (it throws); a line on stdout that is not a JSON object with a string `t`
 * (RPC_VIOLATION); more than a few frames before the job is sent (the member is killed). A member
 * that exits or cannot start before it is ready fails with SandboxUnavailable, never a downgrade.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunErrorCode } from "@/lib/errors";
import type { HostFacts } from "./host";
import { SandboxUnavailable, buildCommand, checkAvailable, isolationReport, type Layout, type MemberOptions } from "./member-command";
import { procTreeStats } from "./process-stats";
import { RpcSession, type Outcome, type SessionChannel, type SessionPolicy } from "./rpc-session";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import { ALLOWED_BUILTINS } from "./script";
import { createMemberDirs, removeMemberDirs, stageInputs, type MemberDirs } from "./stage";
import { readLines } from "./stdout-lines";
import type { Envelope, IsolationReport, StagedInput } from "./types";

export type MemberJob = SessionPolicy & {
  module: string;
  inputs: readonly StagedInput[];
  knownTools: readonly string[];
  signal?: AbortSignal;
};

export class SandboxMember implements SessionChannel {
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
    this.child = spawn(cmd.file, cmd.args, { cwd: cmd.cwd, env: cmd.env, stdio: ["pipe", "pipe", "pipe"], detached: true, ...cmd.identity });
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
    // Lines are never held beyond maxFrameBytes; an overflow fails the run (or kills a waiting member).
    readLines(
      this.child.stdout!,
      opts.limits,
      (line, bytes) => this.onLine(line, bytes),
      (message) => {
        if (this.streamFailure) this.streamFailure("OUTPUT_LIMIT", message);
        else this.kill();
      },
    );
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
