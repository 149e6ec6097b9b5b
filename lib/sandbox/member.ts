/**
 * One sandbox process, used for exactly one run and then destroyed (the warm pool keeps a few
 * started ones waiting for their job). This module runs its life on the host side: spawn (by the
 * spawn helper, ./spawner.ts, with the command from member-command.ts, where the isolation layers
 * are chosen), stdout/stderr framing, run(job), destroy.
 *
 * Guarantees: a job's outcome is always an envelope, built by RpcSession, which validates every
 * frame from the hostile child; the host-side part of L2: a wall-clock kill of the whole process
 * group (SIGKILL), the CPU limit on the host's own measurement of the process tree (sampled while
 * it runs), byte caps on stdout and each frame (OUTPUT_LIMIT, see stdout-lines.ts), a byte cap on
 * stderr (past it stderr is no longer read and the run ends with OUTPUT_LIMIT), and a cap on tool
 * results the child leaves unread (RPC_VIOLATION); the process tree is killed at the end of every
 * run and the member's directories (and its scratch mount) are removed once it is gone, also for
 * a member that dies unused; membersTornDown() waits for those removals.
 * Outcomes that blame a limit come from the host, never from the child's word: TIMEOUT from the
 * wall-clock timer or the measured CPU time (a SIGXCPU death below the limit, e.g. self-sent, is
 * SCRIPT_ERROR); OUTPUT_LIMIT for the scratch from the host's measurement of the tmpfs it mounted;
 * SANDBOX_UNAVAILABLE only for a child that refused or failed before `ready` (before the script is
 * loaded). A frame after `ready` is the script's and cannot claim them (rpc-session.ts).
 * Refuses: a second job (it throws); a line on stdout that is not a JSON object with a string `t`
 * (RPC_VIOLATION); any frame before its job other than `ready` (the member is killed). A member
 * that exits or cannot start before it is ready fails with SandboxUnavailable, never a downgrade.
 */
import { constants } from "node:os";
import { join } from "node:path";
import type { RunErrorCode } from "@/lib/errors";
import type { HostFacts } from "./host";
import { SandboxUnavailable, buildCommand, checkAvailable, isolationReport, scratchBytes, type Layout, type MemberOptions } from "./member-command";
import { procTreeStats, type ProcessUsage } from "./process-stats";
import { RpcSession, type Outcome, type SessionChannel, type SessionPolicy } from "./rpc-session";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import { ALLOWED_BUILTINS } from "./script";
import { spawnRemote, type RemoteChild } from "./spawner";
import { SCRATCH_ENTRIES, createMemberDirs, measureScratch, removeMemberDirs, stageInputs, writeStagedFile, type MemberDirs, type ScratchUsage } from "./stage";
import { readLines } from "./stdout-lines";
import type { Envelope, IsolationReport, SandboxLimits, StagedInput } from "./types";

export type MemberJob = SessionPolicy & {
  module: string;
  inputs: readonly StagedInput[];
  knownTools: readonly string[];
  signal?: AbortSignal;
};

/** How often the host reads the process tree's CPU time while a job runs. */
const CPU_SAMPLE_MS = 250;

/** How a job ended: an outcome (the host's, or the child's `done`), or the process exiting first. */
type Ending = Outcome | { kind: "exit" };

const teardowns = new Set<Promise<void>>();

/** How long after a run its member's directories are removed: past the run's terminal write and answer. */
const TEARDOWN_DELAY_MS = 150;

/** Resolves once every member torn down so far is gone, with its directories and scratch mount. */
export async function membersTornDown(): Promise<void> {
  while (teardowns.size > 0) await Promise.all([...teardowns]);
}

function tracked(teardown: Promise<void>): Promise<void> {
  const done = teardown.catch((error: unknown) => console.error("airlock: a sandbox's directories could not be removed", error));
  teardowns.add(done);
  void done.finally(() => teardowns.delete(done));
  return done;
}

export class SandboxMember implements SessionChannel {
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private used = false;
  private dead = false;
  private readyResolve!: () => void;
  private readyReject!: (e: Error) => void;
  private stderr = "";
  private stderrBytes = 0;
  private frameHandler: ((frame: Record<string, unknown>, bytes: number) => void) | null = null;
  private streamFailure: ((code: RunErrorCode, message: string) => void) | null = null;
  private readySeen = false;
  /** What the bootstrap said when it refused to start (a frame before `ready`). */
  private startupRefusal: string | null = null;
  private teardown: Promise<void> | null = null;

  private constructor(
    private readonly facts: HostFacts,
    private readonly opts: MemberOptions,
    private readonly dirs: MemberDirs,
    private readonly layout: Layout,
    private readonly child: RemoteChild,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    this.ready.catch(() => undefined);
    this.exited = new Promise<void>((resolve) => this.child.once("close", () => resolve()));
    // A member that dies unused (start-up failure, killed while waiting) cleans up after itself.
    void this.exited.then(() => {
      if (!this.used) void this.destroy();
    });
    this.child.once("exit", () => {
      this.dead = true;
      this.readyReject(new SandboxUnavailable(`sandbox exited during start-up: ${this.startupRefusal ?? sanitizeText(this.stderr, 2000)}`));
    });
    this.child.stdin.on("error", () => undefined);
    const maxStderr = opts.limits.maxStderrBytes;
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderrBytes += chunk.length;
      if (this.stderr.length < maxStderr) this.stderr += chunk.toString("utf8").slice(0, maxStderr - this.stderr.length);
      if (this.stderrBytes > maxStderr) {
        // Stop reading: a child must not make the host read (or buffer) an endless stream.
        this.child.stderr.destroy();
        this.fail("OUTPUT_LIMIT", `the script wrote more than ${maxStderr} bytes to stderr`);
      }
    });
    // Lines are never held beyond maxFrameBytes; an overflow fails the run (or kills a waiting member).
    readLines(
      this.child.stdout,
      opts.limits,
      (line, bytes) => this.onLine(line, bytes),
      (message) => this.fail("OUTPUT_LIMIT", message),
    );
  }

  static async create(opts: MemberOptions): Promise<SandboxMember> {
    const facts = await checkAvailable(opts);
    let dirs: MemberDirs;
    try {
      dirs = await createMemberDirs(facts, scratchBytes(opts.limits));
    } catch (cause) {
      throw new SandboxUnavailable(`the sandbox's directories could not be prepared: ${(cause as Error).message}`, { cause });
    }
    try {
      const cmd = buildCommand(facts, opts, dirs);
      // Started by the spawn helper (./spawner.ts): a fork of this process would hold its event loop.
      const child = await spawnRemote({ file: cmd.file, args: cmd.args, cwd: cmd.cwd, env: cmd.env, ...cmd.identity });
      return new SandboxMember(facts, opts, dirs, cmd.layout, child);
    } catch (cause) {
      await tracked(removeMemberDirs(dirs));
      throw new SandboxUnavailable(`the sandbox could not be started: ${(cause as Error).message}`, { cause });
    }
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
      return this.fail("RPC_VIOLATION", "a line on stdout is not a JSON frame");
    }
    if (frame === null || typeof frame !== "object" || Array.isArray(frame) || typeof (frame as { t?: unknown }).t !== "string") {
      return this.fail("RPC_VIOLATION", "a frame is not an object with a string 't'");
    }
    const f = frame as Record<string, unknown>;
    if (!this.readySeen) return this.onStartupFrame(f);
    // After `ready` nothing speaks before its job is sent.
    if (this.frameHandler) this.frameHandler(f, bytes);
    else this.kill();
  }

  /** Before `ready` no script is loaded: a frame other than `ready` is the bootstrap refusing to start. */
  private onStartupFrame(f: Record<string, unknown>): void {
    if (f.t === "ready") {
      this.readySeen = true;
      this.readyResolve();
      return;
    }
    const error = (f.t === "done" && typeof f.error === "object" && f.error !== null ? f.error : {}) as Record<string, unknown>;
    this.startupRefusal = sanitizeText(`${String(error.code ?? `a '${String(f.t)}' frame`)}: ${String(error.message ?? "")}`, 2000);
    this.fail("SANDBOX_UNAVAILABLE", `the sandbox refused to start: ${this.startupRefusal}`);
  }

  /** Ends the running job with a host-side failure, or kills a member that has no job yet. */
  private fail(code: RunErrorCode, message: string): void {
    if (this.streamFailure) this.streamFailure(code, message);
    else this.kill();
  }

  kill(): void {
    try {
      process.kill(-this.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    this.dead = true;
  }

  /**
   * Kills the process tree, then unmounts the scratch and removes the member's directories (once),
   * `afterMs` after the tree is gone: unmounting spawns a process, which a run's answer should not wait behind.
   */
  destroy(afterMs = 0): Promise<void> {
    this.teardown ??= tracked(
      (async () => {
        this.kill();
        await this.exited;
        if (afterMs > 0) await new Promise((resolve) => setTimeout(resolve, afterMs));
        await removeMemberDirs(this.dirs);
      })(),
    );
    return this.teardown;
  }

  /** Runs one job. Never throws: every outcome is an envelope. The member is destroyed afterwards. */
  async run(job: MemberJob): Promise<Envelope> {
    if (this.used) throw new Error("a sandbox member runs exactly one job");
    this.used = true;
    const started = performance.now();
    const session = new RpcSession(job, this);
    let names: string[];
    try {
      writeStagedFile(this.dirs, join(this.dirs.code, "script.mjs"), job.module);
      names = stageInputs(this.dirs, job.inputs, job.limits.maxInputBytes);
    } catch (error) {
      await this.destroy();
      return session.envelope(
        { kind: "fail", code: "SANDBOX_UNAVAILABLE", message: `staging failed: ${(error as Error).message}`, untrusted: false },
        started,
        null,
      );
    }
    let usage: ProcessUsage = { cpuMs: 0, peakRssMb: 0 };
    // A tree that is gone reads as zero: keep the highest figures seen.
    const sample = () => {
      const now = procTreeStats(this.child.pid);
      usage = { cpuMs: Math.max(usage.cpuMs, now.cpuMs), peakRssMb: Math.max(usage.peakRssMb, now.peakRssMb) };
    };
    const ending = await new Promise<Ending>((resolve) => {
      let settled = false;
      const settle = (e: Ending) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(sampler);
        job.signal?.removeEventListener("abort", onAbort);
        resolve(e);
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
      // The CPU limit, on the host's own reading (RLIMIT_CPU is only a backstop above it).
      const sampler = setInterval(() => {
        sample();
        if (usage.cpuMs >= job.limits.cpuSeconds * 1000) session.settle(cpuTimeout(usage.cpuMs, job.limits));
      }, CPU_SAMPLE_MS);
      const onAbort = () => session.settle({ kind: "fail", code: "CANCELLED", message: "the run was cancelled", untrusted: false, status: "cancelled" });
      if (job.signal?.aborted) return onAbort();
      job.signal?.addEventListener("abort", onAbort, { once: true });
      this.streamFailure = (code, message) => session.settle({ kind: "fail", code, message, untrusted: false });
      this.frameHandler = (frame, bytes) => session.onFrame(frame, bytes);
      // "close" (not "exit"): every frame and all of stderr have been read by then.
      void this.exited.then(() => {
        session.closed = true;
        settle({ kind: "exit" });
      });
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
    sample();
    session.abortCalls();
    this.kill();
    const outcome = this.classify(ending, measureScratch(this.dirs), usage, job.limits);
    // The directories go once the process tree is gone, after the run's record and answer (not on the caller's clock).
    void this.destroy(TEARDOWN_DELAY_MS);
    return session.envelope(outcome, started, usage);
  }

  /** The host's measurement of the scratch outranks what the child reported or how it died. */
  private classify(ending: Ending, scratch: ScratchUsage | null, usage: ProcessUsage, limits: SandboxLimits): Outcome {
    if ((ending.kind === "exit" || ending.kind === "done") && scratch) {
      const noInodes = scratch.freeInodes === 0;
      if (noInodes || scratch.usedBytes >= limits.maxArtifactBytes) {
        const what = noInodes ? `all ${SCRATCH_ENTRIES} entries` : `${scratch.usedBytes} bytes, its limit is ${limits.maxArtifactBytes}`;
        return { kind: "fail", code: "OUTPUT_LIMIT", message: `the script filled its scratch space (${what})`, untrusted: false };
      }
    }
    return ending.kind === "exit" ? this.exitOutcome(usage, limits) : ending;
  }

  private exitOutcome(usage: ProcessUsage, limits: SandboxLimits): Outcome {
    const stderr = this.stderr;
    const detail = sanitizeText(stderr, 2000).trim();
    if (!this.readySeen) {
      return { kind: "fail", code: "SANDBOX_UNAVAILABLE", message: `the sandbox exited during start-up${detail ? `: ${detail}` : ""}`, untrusted: false };
    }
    if (/heap out of memory|Reached heap limit|allocation failed/i.test(stderr)) {
      return { kind: "fail", code: "MEMORY_LIMIT", message: "the script exceeded its memory limit", untrusted: false };
    }
    // However it died (SIGXCPU can be sent by the script itself), only the host's reading counts.
    if (usage.cpuMs >= limits.cpuSeconds * 1000) return cpuTimeout(usage.cpuMs, limits);
    const { exitCode: code, signalCode: signal } = this.child;
    // bwrap reports a signal-killed child as 128 + signo.
    const signo = code !== null && code > 128 ? code - 128 : null;
    const name = signal ?? Object.entries(constants.signals).find(([, n]) => n === signo)?.[0];
    return {
      kind: "fail",
      code: "SCRIPT_ERROR",
      message: `the sandbox exited (${name ?? `code ${code}`}) before reporting a result${detail ? `: ${detail}` : ""}`,
      untrusted: detail.length > 0,
    };
  }

  send(frame: unknown): void {
    this.sendLine(JSON.stringify(frame));
  }

  sendLine(line: string): void {
    if (this.dead) return;
    // A child that stops reading its tool results must not make the host buffer them forever.
    if (this.child.stdin.writableLength > this.opts.limits.maxRpcBytes * 4) {
      this.streamFailure?.("RPC_VIOLATION", "the sandbox stopped reading tool results");
      return;
    }
    this.child.stdin.write(`${line}\n`);
  }
}

function cpuTimeout(cpuMs: number, limits: SandboxLimits): Outcome {
  return {
    kind: "fail",
    code: "TIMEOUT",
    message: `the script used ${cpuMs} ms of CPU time; its limit is ${limits.cpuSeconds} s`,
    untrusted: false,
    status: "timed_out",
  };
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
