/**
 * The command line and environment one sandbox member is started with: the isolation layers
 * that the kernel, bubblewrap and Node enforce are all chosen here.
 *
 *  - L0: Node >= 26 with --permission: read only the bootstrap, the allowlisted packages, the
 *    member's code/inputs and its scratch; write only the scratch; no child processes, workers,
 *    addons, WASI, inspector, network, FFI (and node:ffi switched off); no code generation from
 *    strings; `__proto__` throws; heap cap; SIGUSR1 disabled; empty environment; only fds 0-2
 *    (libuv marks every other fd close-on-exec).
 *  - L1 (`strict`): bubblewrap with every namespace unshared, --die-with-parent, --clearenv,
 *    --new-session, a root containing only the node binary and its shared libraries, the
 *    bootstrap, the packages, code and inputs read-only, the scratch (as root the host's tmpfs
 *    with an inode cap, stage.ts, else bubblewrap's size-capped tmpfs); no /proc, no /dev, no
 *    host sockets. bwrap itself is started as uid/gid 65534 when we are root, so the
 *    sandbox is unprivileged on the host as well as inside the user namespace.
 *  - L2 (kernel part): prlimit (nofile, fsize, core=0, cpu, data). RLIMIT_CPU is a backstop one
 *    second above cpuSeconds: the host ends the run at cpuSeconds by its own measurement, so a
 *    CPU-time TIMEOUT never rests on a signal the script could send itself. The wall-clock kill,
 *    the CPU measurement and the stream caps are the member's (member.ts); quotas and tool caps
 *    the session's (rpc-session.ts).
 * Refuses: a missing layer is an error (SandboxUnavailable), never a downgrade: checkAvailable
 * fails without prlimit, for `strict` without a working bubblewrap, or as root without mount and
 * umount (the host mounts the scratch), before any command is built.
 */
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { BOOTSTRAP_PATH, EMPTY_ENV, REPO_ROOT, SANDBOX_GID, SANDBOX_UID, detectHost, type HostFacts } from "./host";
import { resolvePackages, type MemberDirs } from "./stage";
import type { IsolationLevel, IsolationReport, SandboxLimits } from "./types";

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

const INSIDE = {
  node: "/airlock/node",
  bootstrap: "/airlock/runner/bootstrap.mjs",
  runner: "/airlock/runner",
  modules: "/airlock/node_modules",
  code: "/airlock/code",
  inputs: "/airlock/inputs",
  work: "/airlock/work",
};

/** Where the child sees the code, inputs, scratch, runner and packages (inside the strict root, or on the host). */
export type Layout = { code: string; inputs: string; work: string; runner: string; packageBase: string; packageDirs: string[] };

export type MemberCommand = {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The unprivileged identity to start as, when this process may switch to it. */
  identity: { uid?: number; gid?: number };
  layout: Layout;
};

export function buildCommand(facts: HostFacts, opts: MemberOptions, dirs: MemberDirs): MemberCommand {
  const { limits } = opts;
  const packages = resolvePackages(opts.packages);
  const strict = opts.isolation === "strict";
  const env = EMPTY_ENV;
  const identity = facts.canDropPrivileges ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {};
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
    "--no-experimental-ffi",
    `--max-old-space-size=${limits.heapMb}`,
    strict ? INSIDE.bootstrap : BOOTSTRAP_PATH,
  ];
  const prlimit = [
    `--nofile=${limits.maxOpenFiles}`,
    `--fsize=${limits.maxArtifactBytes}`,
    "--core=0",
    `--cpu=${limits.cpuSeconds + 1}`,
    `--data=${limits.dataMb * 1024 * 1024}`,
    "--",
  ];
  if (!strict) return { file: facts.prlimitPath!, args: [...prlimit, ...node], cwd: dirs.work, env, identity, layout };
  const bwrap = ["--unshare-all", "--die-with-parent", "--clearenv", "--new-session", "--hostname", "sandbox"];
  bwrap.push("--uid", String(SANDBOX_UID), "--gid", String(SANDBOX_GID));
  for (const [src, dest] of facts.libraryBinds) bwrap.push("--ro-bind", src, dest);
  bwrap.push("--ro-bind", facts.nodePath, INSIDE.node, "--ro-bind", BOOTSTRAP_PATH, INSIDE.bootstrap);
  for (const p of packages) bwrap.push("--ro-bind", p.dir, `${INSIDE.modules}/${p.name}`);
  bwrap.push("--ro-bind", dirs.code, INSIDE.code, "--ro-bind", dirs.inputs, INSIDE.inputs);
  // Scratch: the host's tmpfs when it could mount one (root), else bubblewrap's (no inode cap).
  if (dirs.umount) bwrap.push("--bind", dirs.work, INSIDE.work);
  else bwrap.push("--size", String(scratchBytes(limits)), "--tmpfs", INSIDE.work);
  bwrap.push("--chdir", INSIDE.work);
  return { file: facts.prlimitPath!, args: [...prlimit, facts.bwrapPath!, ...bwrap, ...node], cwd: dirs.root, env, identity, layout };
}

/** The scratch size: the artifacts cap plus room for the out/ directory entries. */
export function scratchBytes(limits: SandboxLimits): number {
  return limits.maxArtifactBytes + 1024 * 1024;
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
  if (facts.canDropPrivileges && (!facts.mountPath || !facts.umountPath)) {
    throw new SandboxUnavailable("running as root, the host mounts each sandbox's scratch: mount and umount are needed");
  }
  return facts;
}
