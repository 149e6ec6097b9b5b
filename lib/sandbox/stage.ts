/**
 * Preparing what a sandbox may see: its private directories, the staged inputs, the allowlisted
 * packages, and the scratch space the host mounts for it.
 *
 * Guarantees: inputs are COPIED (never linked) into the member's read-only inputs directory; an
 * input whose path or any parent is a symlink, or that is not a regular file, is refused
 * (O_NOFOLLOW closes the race between the check and the open); input names are plain file names.
 * Packages resolve only from the repository's node_modules, with their dependency closure, by
 * validated names. Nobody else on the host can read what is staged: as root the directories are
 * the sandbox identity's (65534), mode 0500, and the files 0400; otherwise they are the service
 * user's, 0700 and 0600. As root the scratch is a tmpfs the host mounts (size and SCRATCH_INODES
 * capped, owned by 65534, nosuid/nodev/noexec), measured by the host after the run
 * (measureScratch) and unmounted with the directories.
 * Refuses: a scratch it cannot mount as root (the caller fails with SandboxUnavailable).
 * Not root: the scratch of `strict` is bubblewrap's tmpfs (size capped, no inode cap, not
 * measurable by the host) and that of `permission-only` a plain directory (docs/sandbox.md).
 * Directories are named after the host process, so what a crashed process left behind (its
 * directories, its scratch mounts) is removed by the next process that creates a member, under
 * either base. They live under `stagingBase()`: the temp directory TMPDIR names; else, as root, a
 * memory file system (/dev/shm) with room for a run's largest inputs; else /tmp. On a disk,
 * creating a staged file waits on the file system's journal, which PostgreSQL's commits keep busy
 * (0.1 to 1 ms a file; 15 µs on /dev/shm), and the script is staged on every run's path. Only as
 * root: there the scratch is a tmpfs of its own, capped; otherwise it is a directory under the
 * base, which a script could fill, and memory is the worse thing to fill.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statfsSync,
  writeFileSync,
  existsSync,
  accessSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { EMPTY_ENV, REPO_ROOT, SANDBOX_GID, SANDBOX_UID, type HostFacts } from "./host";
import { execRemote } from "./spawner";
import type { StagedInput } from "./types";

export class StagingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StagingError";
  }
}

export const INPUT_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;

/** Entries a script may create in a scratch the host mounts: files, directories and links each take one. */
export const SCRATCH_ENTRIES = 4096;
/** The mount's inodes: the entries, the scratch's root and its out/ directory. */
export const SCRATCH_INODES = SCRATCH_ENTRIES + 2;
const DIR_PREFIX = "airlock-sbx-";
/** A member's directory: the prefix, the host process's pid, mkdtemp's suffix. */
const MEMBER_DIR = new RegExp(`^${DIR_PREFIX}(\\d+)-[A-Za-z0-9]{6}$`);
/** Free space /dev/shm must have to be the staging base: four times the default cap on a run's inputs. */
const MEMORY_BASE_MIN_FREE = 1024 * 1024 * 1024;

let base: string | undefined;

/** Where members' directories are created (see the header); decided once per process. */
export function stagingBase(): string {
  // os.tmpdir() is /tmp unless TMPDIR (or TMP, TEMP) names another directory, which then wins.
  base ??= tmpdir() !== "/tmp" || process.getuid?.() !== 0 ? tmpdir() : (memoryBase() ?? tmpdir());
  return base;
}

function memoryBase(): string | null {
  try {
    accessSync("/dev/shm", constants.W_OK);
    const fs = statfsSync("/dev/shm");
    return fs.bavail * fs.bsize >= MEMORY_BASE_MIN_FREE ? "/dev/shm" : null;
  } catch {
    return null;
  }
}

export type MemberDirs = {
  root: string;
  code: string;
  inputs: string;
  work: string;
  /** Who owns what is staged: the sandbox identity when we are root, else null (the service user). */
  owner: { uid: number; gid: number } | null;
  /** umount(8) when `work` is a tmpfs the host mounted (root), else null. */
  umount: string | null;
};

/** The scratch as the host measures it after a run (only for a scratch the host mounted). */
export type ScratchUsage = { usedBytes: number; freeInodes: number };

type MountFacts = Pick<HostFacts, "canDropPrivileges" | "mountPath" | "umountPath">;

/** Creates a member's directories, named after this process; as root, mounts its scratch. */
export async function createMemberDirs(facts: MountFacts, scratchBytes: number): Promise<MemberDirs> {
  const root = mkdtempSync(join(stagingBase(), `${DIR_PREFIX}${process.pid}-`));
  const owner = facts.canDropPrivileges ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : null;
  const dirs: MemberDirs = { root, code: join(root, "code"), inputs: join(root, "inputs"), work: join(root, "work"), owner, umount: null };
  try {
    swept ??= sweepStaleMembers(facts.umountPath).catch((error: unknown) => console.error("airlock: removing stale sandbox directories failed", error));
    await swept;
    for (const dir of [dirs.code, dirs.inputs, dirs.work]) mkdirSync(dir, { mode: 0o700 });
    if (owner) {
      if (!facts.mountPath || !facts.umountPath) throw new StagingError("mount and umount are needed to mount the scratch");
      dirs.umount = facts.umountPath;
      const options = `size=${scratchBytes},nr_inodes=${SCRATCH_INODES},uid=${owner.uid},gid=${owner.gid},mode=0700,nosuid,nodev,noexec`;
      await execRemote(facts.mountPath, ["-t", "tmpfs", "-o", options, "airlock-scratch", dirs.work], { env: EMPTY_ENV, timeout: 10_000 });
      for (const dir of [dirs.code, dirs.inputs, root]) {
        chownSync(dir, owner.uid, owner.gid);
        chmodSync(dir, 0o500);
      }
    }
  } catch (error) {
    await removeMemberDirs(dirs);
    throw error;
  }
  return dirs;
}

/** Unmounts the scratch (if the host mounted it) and removes the directories. */
export async function removeMemberDirs(dirs: MemberDirs): Promise<void> {
  if (dirs.umount) await unmount(dirs.umount, dirs.work);
  rmSync(dirs.root, { recursive: true, force: true });
}

async function unmount(umount: string, dir: string): Promise<void> {
  try {
    // Lazy: detached at once; the kernel frees the tmpfs when the last process inside is gone.
    await execRemote(umount, ["--lazy", dir], { env: EMPTY_ENV, timeout: 10_000 });
  } catch (error) {
    // Not mounted (the mount failed) is fine; anything else must not be hidden by the rm below.
    if (!/not mounted|no mount point/i.test(String((error as { stderr?: string }).stderr))) throw error;
  }
}

let swept: Promise<void> | undefined;

/**
 * Unmounts and removes what members of host processes that are gone left behind (a crash skips
 * their teardown). Run once per process, before its first member.
 */
export async function sweepStaleMembers(umount: string | null): Promise<void> {
  const mounted = new Set(
    readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[4]),
  );
  for (const root of [...new Set([stagingBase(), tmpdir()])].flatMap((dir) => readdirSync(dir).map((name) => join(dir, name)))) {
    const pid = MEMBER_DIR.exec(basename(root))?.[1];
    if (!pid || Number(pid) === process.pid || processAlive(Number(pid))) continue;
    if (mounted.has(join(root, "work"))) {
      if (!umount) continue;
      await unmount(umount, join(root, "work"));
    }
    rmSync(root, { recursive: true, force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** The host's own measurement of a scratch it mounted; null when the scratch is not the host's. */
export function measureScratch(dirs: MemberDirs): ScratchUsage | null {
  if (!dirs.umount) return null;
  const s = statfsSync(dirs.work);
  return { usedBytes: (s.blocks - s.bfree) * s.bsize, freeInodes: s.ffree };
}

/** Writes one staged file (the script, an input) that only its owner can read. */
export function writeStagedFile(dirs: MemberDirs, path: string, data: string | Buffer): void {
  writeFileSync(path, data, { mode: dirs.owner ? 0o400 : 0o600, flag: "wx" });
  if (dirs.owner) chownSync(path, dirs.owner.uid, dirs.owner.gid);
}

export function stageInputs(dirs: MemberDirs, inputs: readonly StagedInput[], maxTotalBytes: number): string[] {
  const names: string[] = [];
  let total = 0;
  for (const input of inputs) {
    if (!INPUT_NAME.test(input.name)) throw new StagingError(`input name '${input.name.slice(0, 100)}' must be a plain file name`);
    if (names.includes(input.name)) throw new StagingError(`input '${input.name}' is given twice`);
    const absolute = resolve(input.path);
    let real: string;
    try {
      real = realpathSync(absolute);
    } catch (cause) {
      throw new StagingError(`input '${input.name}': ${(cause as NodeJS.ErrnoException).code ?? "cannot resolve"} ${absolute}`);
    }
    if (real !== absolute || lstatSync(absolute).isSymbolicLink()) {
      throw new StagingError(`input '${input.name}': symlinks are refused (${absolute})`);
    }
    let fd: number;
    try {
      fd = openSync(absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (cause) {
      throw new StagingError(`input '${input.name}': ${(cause as NodeJS.ErrnoException).code ?? "cannot open"} ${absolute}`);
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile()) throw new StagingError(`input '${input.name}' is not a regular file`);
      total += stat.size;
      if (total > maxTotalBytes) throw new StagingError(`inputs exceed ${maxTotalBytes} bytes`);
      writeStagedFile(dirs, join(dirs.inputs, input.name), readFileSync(fd));
    } finally {
      closeSync(fd);
    }
    names.push(input.name);
  }
  return names;
}

export type ResolvedPackage = { name: string; dir: string };

const resolved = new Map<string, ResolvedPackage[]>();

/** The allowlisted packages and their dependency closure, from the repository's node_modules (cached). */
export function resolvePackages(allowlist: readonly string[]): ResolvedPackage[] {
  const key = allowlist.join("\n");
  let packages = resolved.get(key);
  if (!packages) {
    packages = resolveUncached(allowlist);
    resolved.set(key, packages);
  }
  return packages;
}

function resolveUncached(allowlist: readonly string[]): ResolvedPackage[] {
  const out = new Map<string, string>();
  const visit = (name: string, from: string) => {
    if (!PACKAGE_NAME.test(name)) throw new StagingError(`package name '${name.slice(0, 100)}' is not valid`);
    if (out.has(name)) return;
    const dir = join(REPO_ROOT, "node_modules", name);
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) throw new StagingError(`package '${name}' (${from}) is not installed`);
    out.set(name, realpathSync(dir));
    const deps = (JSON.parse(readFileSync(manifest, "utf8")) as { dependencies?: Record<string, string> }).dependencies;
    for (const dep of Object.keys(deps ?? {})) visit(dep, `dependency of ${name}`);
  };
  for (const name of allowlist) visit(name, "allowlist");
  return [...out].map(([name, dir]) => ({ name, dir }));
}
