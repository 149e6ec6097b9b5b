/**
 * Every `pattern` attribute of the console's forms compiles as browsers compile it: with the `v`
 * flag, under which a hyphen in a class must be escaped. One that does not compile is ignored by
 * the browser (it logs an error and checks nothing), as the agent name's once was.
 */
import { globSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";

it("every form pattern compiles with the v flag", () => {
  const files = [...globSync("components/**/*.tsx"), ...globSync("app/**/*.tsx")];
  const patterns = files.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/\bpattern="([^"]*)"/g)].map((m) => ({ file, pattern: m[1]! })));
  expect(patterns.length).toBeGreaterThan(0);
  for (const { file, pattern } of patterns) expect(() => new RegExp(`^(?:${pattern})$`, "v"), `${file}: ${pattern}`).not.toThrow();
});
