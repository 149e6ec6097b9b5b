/**
 * makeDirectory(path, mode): `mkdir -p` that always ends.
 *
 * Node's `mkdir(path, { recursive: true })` never returns when a level cannot be made though its
 * parent exists and the refusal is ENOENT, as under /proc (`AIRLOCK_DATA_DIR=/proc/x` spun
 * `npm start` at 100% CPU with no output). This walks up to the nearest existing ancestor and makes
 * each missing level below it once, so such a path fails with the error of the level that could
 * not be made. Every level it makes gets `mode`, as Node's recursive mkdir gives them (before the
 * umask); one that another process made meanwhile is accepted.
 *
 * Refuses: a path that is, or goes through, a file (ENOTDIR).
 */
import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

export async function makeDirectory(path: string, mode: number): Promise<void> {
  const target = resolve(path);
  // As Node's recursive mkdir says it, naming the path asked for.
  const notADirectory = () => Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${target}'`), { code: "ENOTDIR", path: target });
  const missing: string[] = [];
  for (let dir = target; ; dir = dirname(dir)) {
    const found = await stat(dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error.code === "ENOTDIR" ? notADirectory() : error;
    });
    if (found) {
      if (!found.isDirectory()) throw notADirectory();
      break;
    }
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    await mkdir(dir, { mode }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST" || !(await stat(dir)).isDirectory()) throw error;
    });
  }
}
