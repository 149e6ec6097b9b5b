import { sign } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "@/lib/canonical-json";
import { loadCheckpoints, loadSigningKey, writeCheckpoint, type TreeState } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import { tempCheckpoints } from "./testing";

function treeOf(...hashes: string[]): TreeState {
  const range = CompactRange.empty();
  for (const hash of hashes) range.append(eventLeafHash(hash));
  return { size: range.size, root: range.root(), frontier: range.frontier() };
}

describe("checkpoints", () => {
  it("generates the signing key once (0600) and reuses it", async () => {
    const config = await tempCheckpoints();
    const first = await loadSigningKey(config.keyFile);
    const again = await loadSigningKey(config.keyFile);
    expect(again.keyId).toBe(first.keyId);
    expect((await stat(config.keyFile)).mode & 0o777).toBe(0o600);
  });

  it("writes signed tree heads that load back as valid, and rejects an edited one", async () => {
    const config = await tempCheckpoints();
    const tree = treeOf("a".repeat(64), "b".repeat(64), "c".repeat(64));
    const { file } = await writeCheckpoint(config, { id: 42n, hash: "c".repeat(64), at: new Date("2026-11-30T00:00:00Z") }, tree);
    expect(await loadCheckpoints(config)).toEqual([
      expect.objectContaining({
        valid: true,
        checkpoint: expect.objectContaining({ version: 2, eventId: "42", hash: "c".repeat(64), treeSize: 3, rootHash: tree.root.toString("hex") }),
      }),
    ]);
    const written = JSON.parse(await readFile(file, "utf8"));
    expect(written.frontier).toHaveLength(2);
    for (const edit of [{ hash: "d".repeat(64) }, { treeSize: 4 }, { rootHash: "e".repeat(64) }]) {
      await writeFile(file, JSON.stringify({ ...written, ...edit }));
      expect(await loadCheckpoints(config)).toEqual([expect.objectContaining({ valid: false, eventId: "42", problem: "signature does not verify" })]);
    }
    // The frontier is not signed, but one that does not fold to the signed root is refused.
    await writeFile(file, JSON.stringify({ ...written, frontier: [written.frontier[1], written.frontier[0]] }));
    expect(await loadCheckpoints(config)).toEqual([expect.objectContaining({ valid: false, problem: "its frontier does not fold to its signed root" })]);
  });

  it("still accepts a version 1 checkpoint (chain head only, written before tree heads)", async () => {
    const config = await tempCheckpoints();
    const key = await loadSigningKey(config.keyFile);
    const unsigned = { version: 1, eventId: "7", hash: "a".repeat(64), at: "2026-11-30T00:00:00.000Z", signedAt: "2026-11-30T00:01:00.000Z", keyId: key.keyId };
    const signature = sign(null, Buffer.from(canonicalJson(unsigned)), key.privateKey).toString("base64");
    await writeCheckpoint(config, { id: 1n, hash: "b".repeat(64), at: new Date() }, treeOf("b".repeat(64)));
    await writeFile(join(config.dir, "checkpoint-v1.json"), JSON.stringify({ ...unsigned, signature }));
    const loaded = await loadCheckpoints(config);
    expect(loaded.map((c) => c.valid && c.checkpoint.version)).toEqual([2, 1]);
  });

  it("does not trust a checkpoint signed by another key", async () => {
    const config = await tempCheckpoints();
    const other = await tempCheckpoints();
    await writeCheckpoint({ ...other, dir: config.dir }, { id: 1n, hash: "a".repeat(64), at: new Date() }, treeOf("a".repeat(64)));
    const [loaded] = await loadCheckpoints(config);
    expect(loaded).toMatchObject({ valid: false, problem: expect.stringMatching(/another key/) });
  });
});
