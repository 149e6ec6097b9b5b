/**
 * The README's Node.js requirement is the one npm enforces: read from README.md, package.json and
 * the engines of the installed direct dependencies (node_modules), so a dependency that raises its
 * minimum, or an edit of the README, fails here instead of surprising a new user.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const STATEMENT =
  "Node.js 24.5+ (or 22.21+) recommended; Node 20 installs with many EBADENGINE warnings (harmless: they name packages' engine ranges); the product runs on the Node 26 that `npm install` fetches; bubblewrap is required by the default `strict` sandbox.";

type PackageJson = { engines?: { node?: string }; dependencies?: Record<string, string>; devDependencies?: Record<string, string> };

const root = new URL("../", import.meta.url);
const readJson = (path: string) => JSON.parse(readFileSync(new URL(path, root), "utf8")) as PackageJson;
const pkg = readJson("package.json");

function parse(version: string): number[] {
  const parts = version.split(".").map(Number);
  if (parts.length > 3 || parts.some((part) => !Number.isInteger(part))) throw new Error(`not a version: ${version}`);
  return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0];
}

function compare(a: number[], b: number[]): number {
  return a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
}

/** npm's range check for the forms dependencies use here (`>=x`, `<x`, `^x`, `a b`, `a || b`); anything else throws. */
function admits(range: string, version: string): boolean {
  const v = parse(version);
  return range.split("||").some((alternative) =>
    alternative
      .replace(/(>=|<|\^)\s+/g, "$1")
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const match = /^(>=|<|\^)(\d+(?:\.\d+){0,2})$/.exec(comparator);
        if (!match) throw new Error(`unsupported engines range "${range}"`);
        const bound = parse(match[2]!);
        if (match[1] === "<") return compare(v, bound) < 0;
        return compare(v, bound) >= 0 && (match[1] === ">=" || v[0] === bound[0]);
      }),
  );
}

describe("README: the Node.js requirement", () => {
  it("states the requirement exactly, and no longer claims Node ≥ 20", () => {
    const readme = readFileSync(new URL("README.md", root), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain(STATEMENT.replace(/\.$/, ""));
    expect(readme).not.toMatch(/Node(\.js)? ≥ ?20/);
  });

  it("agrees with the engines of the installed dependencies: 24.5 and 22.21 are the least versions of their lines all of them accept, and Node 20 is refused by one", () => {
    const engines = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).flatMap((name) => {
      const range = readJson(`node_modules/${name}/package.json`).engines?.node;
      return range ? [{ name, range }] : [];
    });
    for (const least of ["22.21.0", "24.5.0", "26.0.0"])
      expect(
        engines.filter(({ range }) => !admits(range, least)),
        least,
      ).toEqual([]);
    for (const below of ["22.20.99", "23.11.0", "24.4.99"]) expect(engines.filter(({ range }) => !admits(range, below)).length, below).toBeGreaterThan(0);
    expect(engines.filter(({ range }) => !admits(range, "20.19.0")).length).toBeGreaterThan(0);
  });

  it("agrees with package.json: its engines let Node 20 install, and the Node it fetches is 26", () => {
    const range = pkg.engines?.node;
    if (range !== undefined) {
      for (const version of ["20.0.0", "22.18.0", "26.0.0"]) expect(admits(range, version), `${range} admits ${version}`).toBe(true);
    }
    expect(pkg.devDependencies?.node).toMatch(/^26\./);
  });
});
