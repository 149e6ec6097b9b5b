/**
 * Preparing what a sandbox may see: its private directories, the staged inputs, the allowlisted
 * packages.
 *
 * Guarantees: inputs are COPIED (never linked) into the member's read-only inputs directory; an
 * input whose path or any parent is a symlink, or that is not a regular file, is refused
 * (O_NOFOLLOW closes the race between the check and the open); input names are plain file names.
 * Packages resolve only from the repository's node_modules, with their dependency closure, by
 * validated names. The scratch directory is writable only by the sandbox identity.
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
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
  existsSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { REPO_ROOT, SANDBOX_GID, SANDBOX_UID } from "./host";
import type { StagedInput } from "./types";

export class StagingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StagingError";
  }
}

export const INPUT_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;

export type MemberDirs = { root: string; code: string; inputs: string; work: string };

export function createMemberDirs(dropPrivileges: boolean): MemberDirs {
  const root = mkdtempSync(join(tmpdir(), "airlock-sbx-"));
  chmodSync(root, 0o755);
  const dirs = { root, code: join(root, "code"), inputs: join(root, "inputs"), work: join(root, "work") };
  mkdirSync(dirs.code, { mode: 0o755 });
  mkdirSync(dirs.inputs, { mode: 0o755 });
  mkdirSync(dirs.work, { mode: 0o700 });
  if (dropPrivileges) chownSync(dirs.work, SANDBOX_UID, SANDBOX_GID);
  return dirs;
}

export function removeMemberDirs(dirs: MemberDirs): void {
  rmSync(dirs.root, { recursive: true, force: true });
}

export function stageInputs(targetDir: string, inputs: readonly StagedInput[], maxTotalBytes: number): string[] {
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
      writeFileSync(join(targetDir, input.name), readFileSync(fd), { mode: 0o444, flag: "wx" });
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
