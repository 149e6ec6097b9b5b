/**
 * airlock.config.json as read: a key given twice is refused, a byte-order mark is not JSON; and the
 * `sandbox` key: `allowDegraded` is accepted and typed, and the section
 * stays closed — a misspelt or mistyped key is refused naming its path, never ignored (an ignored
 * `allowDegraded` typo would silently change whether start-up refuses).
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config";

async function configFile(sandbox: unknown): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), "airlock-config-")), "airlock.config.json");
  await writeFile(file, JSON.stringify({ servers: {}, sandbox }));
  return file;
}

describe("the sandbox section", () => {
  it("accepts allowDegraded, with the other keys defaulted", async () => {
    expect(loadConfig(await configFile({ allowDegraded: true })).sandbox).toEqual({ isolation: "strict", poolSize: 2, allowDegraded: true });
    expect(loadConfig(await configFile({ isolation: "strict" })).sandbox.allowDegraded).toBeUndefined();
  });

  it.each([
    [{ allowDegrade: true }, 'sandbox: Unrecognized key: "allowDegrade"'],
    [{ allowDegraded: "yes" }, "sandbox.allowDegraded: Invalid input: expected boolean, received string"],
    [{ isolation: "none" }, "sandbox.isolation: Invalid option"],
  ])("refuses %j with a ConfigError naming the key", async (sandbox, problem) => {
    const file = await configFile(sandbox);
    let error: unknown;
    try {
      loadConfig(file);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([expect.stringContaining(problem)]);
    expect((error as ConfigError).message).toContain(`${file} is invalid:`);
  });
});

describe("the file as text", () => {
  const write = async (text: string) => {
    const file = join(await mkdtemp(join(tmpdir(), "airlock-config-")), "airlock.config.json");
    await writeFile(file, text);
    return file;
  };

  it("refuses a key given twice in one object: JSON.parse would keep the last, and a second servers drop every server", async () => {
    const file = await write('{"servers":{"ledger":{"transport":"stdio","command":"node"}},"servers":{}}');
    expect(() => loadConfig(file)).toThrow(ConfigError);
    expect(() => loadConfig(file)).toThrow(/the key "servers" appears twice in one object/);
  });

  it("reads a file saved with a byte-order mark", async () => {
    expect(loadConfig(await write('\ufeff{"servers":{}}')).servers).toEqual({});
  });
});
