/**
 * makeDirectory on the real filesystem: it makes every missing level with the mode asked, accepts
 * what exists, names an ancestor that is a file, and ends with ENOENT under /proc, where Node's
 * recursive mkdir spins forever (this test then fails on its timeout).
 */
import { mkdtemp, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeDirectory } from "./make-directory";

describe("makeDirectory", () => {
  it("makes every missing level, each with the mode asked (umask 022 leaves 0711 as is)", async () => {
    const root = await mkdtemp(join(tmpdir(), "airlock-mkdir-"));
    await makeDirectory(join(root, "a", "b", "c"), 0o711);
    for (const level of ["a", "a/b", "a/b/c"]) {
      const found = await stat(join(root, level));
      expect(found.isDirectory()).toBe(true);
      expect(found.mode & 0o777).toBe(0o711);
    }
    // Again, and on a path that exists: nothing to do, no error.
    await makeDirectory(join(root, "a", "b", "c"), 0o711);
    await makeDirectory(root, 0o700);
  });

  it("refuses a path that is or goes through a file", async () => {
    const root = await mkdtemp(join(tmpdir(), "airlock-mkdir-"));
    await writeFile(join(root, "file"), "x");
    await expect(makeDirectory(join(root, "file"), 0o700)).rejects.toMatchObject({ code: "ENOTDIR", path: join(root, "file") });
    await expect(makeDirectory(join(root, "file", "below"), 0o700)).rejects.toThrow(`ENOTDIR: not a directory, mkdir '${join(root, "file", "below")}'`);
  });

  it("ends with ENOENT under /proc, which refuses new entries", async () => {
    await expect(makeDirectory("/proc/airlock-test/data", 0o700)).rejects.toMatchObject({ code: "ENOENT" });
  }, 5_000);
});
