import { readFile, stat, writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { loadCheckpoints, loadSigningKey, writeCheckpoint } from "./checkpoints";
import { tempCheckpoints } from "./testing";

describe("checkpoints", () => {
  it("generates the signing key once (0600) and reuses it", async () => {
    const config = await tempCheckpoints();
    const first = await loadSigningKey(config.keyFile);
    const again = await loadSigningKey(config.keyFile);
    expect(again.keyId).toBe(first.keyId);
    expect((await stat(config.keyFile)).mode & 0o777).toBe(0o600);
  });

  it("writes signed files that load back as valid, and rejects an edited one", async () => {
    const config = await tempCheckpoints();
    const { file } = await writeCheckpoint(config, { id: 42n, hash: "b".repeat(64), at: new Date("2026-11-30T00:00:00Z") });
    expect(await loadCheckpoints(config)).toEqual([
      expect.objectContaining({ valid: true, checkpoint: expect.objectContaining({ eventId: "42", hash: "b".repeat(64) }) }),
    ]);
    const edited = JSON.parse(await readFile(file, "utf8"));
    await writeFile(file, JSON.stringify({ ...edited, hash: "c".repeat(64) }));
    expect(await loadCheckpoints(config)).toEqual([expect.objectContaining({ valid: false, eventId: "42", problem: "signature does not verify" })]);
  });

  it("does not trust a checkpoint signed by another key", async () => {
    const config = await tempCheckpoints();
    const other = await tempCheckpoints();
    await writeCheckpoint({ ...other, dir: config.dir }, { id: 1n, hash: "a".repeat(64), at: new Date() });
    const [loaded] = await loadCheckpoints(config);
    expect(loaded).toMatchObject({ valid: false, problem: expect.stringMatching(/another key/) });
  });
});
