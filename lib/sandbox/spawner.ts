/**
 * The processes a sandbox needs (the member itself, and as root the mount and umount of its
 * scratch) are started by a small helper process, not by this one.
 *
 * Why: fork() copies the parent's page tables, so a spawn from the host process — hundreds of
 * megabytes once Next, Prisma and the TypeScript checker are loaded — holds its event loop for
 * 15–30 ms, three or four times a run (bench:sandbox, `eventLoop`). Every other run's tool calls,
 * every MCP request and every console page waited behind it. The helper is a bare Node process of
 * a few tens of megabytes: it forks in a few milliseconds, and this process's loop goes on.
 *
 * Guarantees:
 * - the helper runs HELPER_SOURCE and nothing else, with an empty environment, and takes requests
 *   only over its private IPC channel; it is started on first use, and again after it dies;
 * - a started child's stdin, stdout and stderr are handed to this process: the helper stops
 *   reading the child's output before its event loop could read a byte, then sends the pipes and
 *   closes its copies, so every byte the child writes is read here, in order;
 * - `RemoteChild` emits `exit` (code, signal) when the helper saw the child exit, and `close` once
 *   it has exited and both of its output pipes are drained here — as ChildProcess does;
 * - the helper dying does not leave a child unaccounted for: each child it started is killed (its
 *   whole process group) and reported as exited with signal SIGKILL; pending requests fail;
 * - the helper exits when this process does (its IPC channel closes).
 * Refuses: nothing of its own; a failed spawn or command rejects with the helper's error message.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { EMPTY_ENV } from "./host";

/** The helper's whole program (CommonJS, run with `node -e`: nothing to resolve or bundle). */
const HELPER_SOURCE = String.raw`
"use strict";
const { spawn, execFile } = require("node:child_process");
process.on("disconnect", () => process.exit(0));
const reply = (message, handle) => { if (process.connected) process.send(message, handle); };
process.on("message", (m) => {
  if (m.op === "exec") {
    execFile(m.file, m.args, { env: m.env, timeout: m.timeout }, (error, stdout, stderr) =>
      reply({ id: m.id, exec: { error: error ? { message: error.message, code: error.code ?? null, signal: error.signal ?? null } : null, stdout, stderr } }));
    return;
  }
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, stdio: ["pipe", "pipe", "pipe"], detached: true, uid: m.uid, gid: m.gid });
  } catch (error) {
    reply({ id: m.id, error: String(error && error.message) });
    return;
  }
  // Not one byte of the child's output is read here: the pipes are read by the host alone.
  for (const pipe of [child.stdout, child.stderr]) { pipe._handle.reading = false; pipe._handle.readStop(); }
  child.once("error", (error) => reply({ id: m.id, error: error.message }));
  child.once("spawn", () => {
    reply({ id: m.id, pid: child.pid, fd: 0 }, child.stdin);
    reply({ id: m.id, fd: 1 }, child.stdout);
    reply({ id: m.id, fd: 2 }, child.stderr);
  });
  child.once("exit", (code, signal) => reply({ id: m.id, exit: { code, signal } }));
});
`;

export type SpawnRequest = { file: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv; uid?: number; gid?: number };
export type ExecResult = { stdout: string; stderr: string };
/** A failed command, shaped like execFile's error: its message, exit code or signal, and what it wrote. */
export type ExecError = Error & { code: number | string | null; signal: string | null; stdout: string; stderr: string };

type Reply = {
  id: number;
  error?: string;
  pid?: number;
  fd?: 0 | 1 | 2;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  exec?: { error: { message: string; code: number | string | null; signal: string | null } | null; stdout: string; stderr: string };
};

/** A child the helper started, with its pipes here; the part of ChildProcess the sandbox uses. */
export class RemoteChild extends EventEmitter {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private open = 2;
  private exited = false;

  constructor(
    readonly pid: number,
    readonly stdin: Socket,
    readonly stdout: Socket,
    readonly stderr: Socket,
  ) {
    super();
    for (const output of [stdout, stderr]) output.once("close", () => this.outputClosed());
  }

  /** The helper saw the child exit (or died, and the child with it). */
  markExited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit("exit", code, signal);
    if (this.open === 0) this.emit("close", code, signal);
  }

  private outputClosed(): void {
    this.open--;
    if (this.open === 0 && this.exited) this.emit("close", this.exitCode, this.signalCode);
  }
}

type Pending = {
  reply(message: Reply, handle: Socket | undefined): void;
  /** The helper is gone. */
  lost(): void;
};

class Spawner {
  private helper: ChildProcess | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  private channel(): ChildProcess {
    if (this.helper) return this.helper;
    const helper: ChildProcess = spawn(process.execPath, ["-e", HELPER_SOURCE], { stdio: ["ignore", "ignore", "inherit", "ipc"], env: EMPTY_ENV });
    helper.on("message", (message: Reply, handle: Socket | undefined) => this.pending.get(message.id)?.reply(message, handle));
    helper.once("exit", () => {
      if (this.helper === helper) this.helper = null;
      const lost = [...this.pending.values()];
      this.pending.clear();
      for (const request of lost) request.lost();
    });
    helper.on("error", (error) => console.error("airlock: the sandbox's spawn helper failed", error));
    this.helper = helper;
    this.refresh();
    return helper;
  }

  /** The helper keeps this process alive only while a request or a child of it is outstanding. */
  private refresh(): void {
    if (!this.helper) return;
    const busy = this.pending.size > 0;
    if (busy) {
      this.helper.ref();
      this.helper.channel?.ref();
    } else {
      this.helper.unref();
      this.helper.channel?.unref();
    }
  }

  private request(message: Record<string, unknown>, pending: Pending): number {
    const helper = this.channel();
    const id = this.nextId++;
    this.pending.set(id, pending);
    this.refresh();
    helper.send({ ...message, id });
    return id;
  }

  private done(id: number): void {
    this.pending.delete(id);
    this.refresh();
  }

  spawn(request: SpawnRequest): Promise<RemoteChild> {
    return new Promise((resolve, reject) => {
      const pipes: Partial<Record<0 | 1 | 2, Socket>> = {};
      let pid: number | undefined;
      let child: RemoteChild | null = null;
      const id = this.request(
        { op: "spawn", ...request },
        {
          reply: (message, handle) => {
            if (message.error !== undefined && !child) {
              this.done(id);
              for (const pipe of Object.values(pipes)) pipe.destroy();
              return reject(new Error(message.error));
            }
            if (message.fd !== undefined && handle) pipes[message.fd] = handle;
            if (message.pid !== undefined) pid = message.pid;
            if (!child && pid !== undefined && pipes[0] && pipes[1] && pipes[2]) {
              child = new RemoteChild(pid, pipes[0], pipes[1], pipes[2]);
              resolve(child);
            }
            if (message.exit) {
              this.done(id);
              child?.markExited(message.exit.code, message.exit.signal);
            }
          },
          lost: () => {
            if (pid !== undefined) killGroup(pid);
            if (child) child.markExited(null, "SIGKILL");
            else {
              for (const pipe of Object.values(pipes)) pipe.destroy();
              reject(new Error("the sandbox's spawn helper exited"));
            }
          },
        },
      );
    });
  }

  exec(file: string, args: string[], options: { env: NodeJS.ProcessEnv; timeout: number }): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const id = this.request(
        { op: "exec", file, args, env: options.env, timeout: options.timeout },
        {
          reply: (message) => {
            if (!message.exec) return;
            this.done(id);
            const { error, stdout, stderr } = message.exec;
            if (!error) return resolve({ stdout, stderr });
            reject(Object.assign(new Error(error.message), { code: error.code, signal: error.signal, stdout, stderr }) as ExecError);
          },
          lost: () => reject(new Error(`the sandbox's spawn helper exited while running ${file}`)),
        },
      );
    });
  }

  /** For tests: the helper's pid, starting it if needed. */
  helperPid(): number | undefined {
    return this.channel().pid;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

const spawner = new Spawner();

/** Starts `file` detached (its own process group) through the helper; resolves once its pipes are here. */
export function spawnRemote(request: SpawnRequest): Promise<RemoteChild> {
  return spawner.spawn(request);
}

/** Runs a command to completion through the helper, like execFile. */
export function execRemote(file: string, args: string[], options: { env: NodeJS.ProcessEnv; timeout: number }): Promise<ExecResult> {
  return spawner.exec(file, args, options);
}

/** The helper's pid (starting it): for tests that kill it. */
export function spawnHelperPid(): number | undefined {
  return spawner.helperPid();
}
