/**
 * lib/review hands a queued run to the executor only through the `startExecution` its caller
 * passes in: it never imports the runtime, which (through the job queue) imports back into it.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("lib/review", () => {
  it("does not import lib/runs/runtime, statically or dynamically", async () => {
    const dir = join(process.cwd(), "lib/review");
    const sources = (await readdir(dir)).filter((name) => /\.tsx?$/.test(name) && !name.endsWith(".test.ts"));
    expect(sources.length).toBeGreaterThan(5);
    for (const name of sources) {
      const text = await readFile(join(dir, name), "utf8");
      expect(text, name).not.toMatch(/["'](@\/lib\/runs\/runtime|\.\.\/runs\/runtime)["']/);
    }
  });
});
