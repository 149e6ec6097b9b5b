/**
 * Facts about the host the sandbox runs on, detected once per process and cached; a probe that
 * found a layer missing (or failed) is repeated, at most every 30 s (REPROBE_AFTER_MS).
 *
 * Guarantees: the Node binary handed to the launcher is a real ELF binary (symlinks resolved) of
 * version >= MIN_NODE; bubblewrap is reported usable only if a probe sandbox actually started;
 * the shared libraries the binary needs are listed so the strict root can bind exactly those.
 * Refuses: Node older than MIN_NODE (the permission model before 25 does not restrict the network;
 * 26.10.0 is the pinned, patched line). Nothing here weakens isolation: it only reports.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync, realpathSync, accessSync, constants } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

export const MIN_NODE: readonly [number, number, number] = [26, 10, 0];

/** Repository root (this file is lib/sandbox/host.ts). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BOOTSTRAP_PATH = join(REPO_ROOT, "lib", "sandbox", "child", "bootstrap.mjs");

/** The fixed unprivileged identity sandboxes run as when the host is root (nobody/nogroup). */
export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;

/** An empty environment for child processes (Next's types make NODE_ENV required in ProcessEnv). */
export const EMPTY_ENV = {} as NodeJS.ProcessEnv;

export type CgroupSupport = "v2-delegated-unused" | "not-delegated";

export type HostFacts = {
  nodePath: string;
  nodeVersion: string;
  /** [source on host, path inside the strict root] for every shared library the binary loads. */
  libraryBinds: [string, string][];
  bwrapPath: string | null;
  prlimitPath: string | null;
  /** Whether this process may switch the sandbox to SANDBOX_UID (it is root). */
  canDropPrivileges: boolean;
  /** mount(8) and umount(8): as root the host mounts each sandbox's scratch itself (stage.ts). */
  mountPath: string | null;
  umountPath: string | null;
  cgroup: CgroupSupport;
};

export function parseVersion(version: string): [number, number, number] | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

export function versionAtLeast(version: string, min: readonly [number, number, number]): boolean {
  const v = parseVersion(version);
  if (!v) return false;
  for (let i = 0; i < 3; i++) {
    if (v[i]! !== min[i]!) return v[i]! > min[i]!;
  }
  return true;
}

function which(name: string): string | null {
  for (const dir of ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"]) {
    const candidate = join(/*turbopackIgnore: true*/ dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

async function nodeVersionOf(path: string): Promise<string | null> {
  try {
    const { stdout } = await run(path, ["--version"], { env: EMPTY_ENV, timeout: 10_000 });
    return stdout.trim();
  } catch {
    return null;
  }
}

async function libraryBindsOf(binary: string): Promise<[string, string][]> {
  const ldd = which("ldd");
  if (!ldd) throw new Error("ldd is missing: the strict root cannot be assembled");
  const { stdout } = await run(ldd, [binary], { env: EMPTY_ENV, timeout: 10_000 });
  const binds: [string, string][] = [];
  for (const line of stdout.split("\n")) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m?.[1]) binds.push([realpathSync(m[1]), m[1]]);
  }
  return binds;
}

function detectCgroup(): CgroupSupport {
  // A pure v2 hierarchy with memory+pids enabled below a cgroup we may write to.
  try {
    const controllers = readFileSync("/sys/fs/cgroup/cgroup.controllers", "utf8");
    const self = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1];
    if (!self || !/\bmemory\b/.test(controllers) || !/\bpids\b/.test(controllers)) return "not-delegated";
    accessSync(join("/sys/fs/cgroup", self), constants.W_OK);
    return "v2-delegated-unused";
  } catch {
    return "not-delegated";
  }
}

async function bwrapWorks(bwrap: string, facts: Omit<HostFacts, "bwrapPath">): Promise<boolean> {
  const args = ["--unshare-all", "--die-with-parent", "--clearenv"];
  for (const [src, dest] of facts.libraryBinds) args.push("--ro-bind", src, dest);
  args.push("--ro-bind", facts.nodePath, "/airlock/node", "/airlock/node", "--version");
  try {
    const { stdout } = await run(bwrap, args, {
      env: EMPTY_ENV,
      timeout: 10_000,
      ...(facts.canDropPrivileges ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {}),
    });
    return stdout.trim() === facts.nodeVersion;
  } catch {
    return false;
  }
}

/** After a probe that found a layer missing (no working bubblewrap, no prlimit, no usable Node), the earliest time to probe again. */
export const REPROBE_AFTER_MS = 30_000;

/**
 * Caches a host probe: a probe that found every layer is kept for the process's life; one that
 * found a layer missing (or failed) is kept for REPROBE_AFTER_MS by `now`, then the next call probes
 * again, so installing bubblewrap takes effect without a restart. Calls while a probe runs share it.
 */
export function cachedHostProbe(probe: (nodePath?: string) => Promise<HostFacts>, now: () => number = Date.now): (nodePath?: string) => Promise<HostFacts> {
  let cached: { key: string; facts: Promise<HostFacts>; retryAt: number } | undefined;
  return (nodePath) => {
    const key = nodePath ?? "";
    if (!cached || cached.key !== key || now() >= cached.retryAt) {
      const entry = { key, facts: probe(nodePath), retryAt: Infinity };
      cached = entry;
      entry.facts.then(
        (facts) => {
          if (!facts.bwrapPath || !facts.prlimitPath) entry.retryAt = now() + REPROBE_AFTER_MS;
        },
        () => {
          entry.retryAt = now() + REPROBE_AFTER_MS;
        },
      );
    }
    return cached.facts;
  };
}

/**
 * Finds a Node >= MIN_NODE: the explicit path, else this process's binary, else the repo's pinned
 * `node` package. Returns null facts' nodePath never: throws with the reason instead.
 */
export const detectHost = cachedHostProbe(detect);

async function detect(explicit?: string): Promise<HostFacts> {
  const candidates = explicit ? [explicit] : [process.execPath, join(REPO_ROOT, "node_modules", "node", "bin", "node")];
  let found: { path: string; version: string } | undefined;
  const seen: string[] = [];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const path = realpathSync(candidate);
    const version = path === realpathSync(process.execPath) ? process.version : await nodeVersionOf(path);
    seen.push(`${path} (${version ?? "unknown"})`);
    if (version && versionAtLeast(version, MIN_NODE)) {
      found = { path, version };
      break;
    }
  }
  if (!found) {
    throw new Error(`no Node >= ${MIN_NODE.join(".")} found; tried ${seen.join(", ") || candidates.join(", ")}`);
  }
  const base = {
    nodePath: found.path,
    nodeVersion: found.version,
    libraryBinds: await libraryBindsOf(found.path),
    prlimitPath: which("prlimit"),
    canDropPrivileges: process.getuid?.() === 0,
    mountPath: which("mount"),
    umountPath: which("umount"),
    cgroup: detectCgroup(),
  };
  const bwrap = which("bwrap");
  return { ...base, bwrapPath: bwrap && (await bwrapWorks(bwrap, base)) ? bwrap : null };
}
