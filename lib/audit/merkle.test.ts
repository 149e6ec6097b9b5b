import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  CompactRange,
  EMPTY_ROOT,
  MerkleLevels,
  eventLeafHash,
  leafHash,
  nodeHash,
  rootFromInclusionProof,
  verifyConsistency,
  verifyInclusion,
} from "./merkle";

// The reference tree of Certificate Transparency and Trillian (RFC 6962): eight leaves, the root
// of each prefix, and known inclusion and consistency proofs.
const LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map((hex) => Buffer.from(hex, "hex"));
const ROOTS = [
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
const INCLUSION = [
  {
    index: 0,
    size: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    index: 5,
    size: 8,
    proof: [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  { index: 2, size: 3, proof: ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"] },
  {
    index: 1,
    size: 5,
    proof: [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  },
  { index: 0, size: 1, proof: [] },
];
const CONSISTENCY = [
  {
    first: 1,
    second: 8,
    proof: [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  {
    first: 6,
    second: 8,
    proof: [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  },
  {
    first: 2,
    second: 5,
    proof: ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e", "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
  },
  {
    first: 3,
    second: 8,
    proof: [
      "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
      "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
      "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  },
  { first: 8, second: 8, proof: [] },
];
const hex = (hashes: Buffer[]) => hashes.map((h) => h.toString("hex"));
const unhex = (hashes: string[]) => hashes.map((h) => Buffer.from(h, "hex"));

function reference(): MerkleLevels {
  const tree = new MerkleLevels();
  for (const leaf of LEAVES) tree.append(leafHash(leaf));
  return tree;
}

/** MTH of RFC 6962 §2.1, written as the RFC writes it, to compare the fast versions against. */
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0]!;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

describe("merkle (RFC 6962)", () => {
  it("reproduces the reference roots, with the compact range and with the levels", () => {
    const tree = reference();
    const range = CompactRange.empty();
    expect(range.root()).toEqual(EMPTY_ROOT);
    expect(EMPTY_ROOT.toString("hex")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    LEAVES.forEach((leaf, i) => {
      range.append(leafHash(leaf));
      expect(range.root().toString("hex")).toBe(ROOTS[i]);
      expect(tree.root(i + 1).toString("hex")).toBe(ROOTS[i]);
    });
  });

  it("produces and verifies the reference inclusion proofs, and refuses altered ones", () => {
    const tree = reference();
    for (const { index, size, proof } of INCLUSION) {
      expect(hex(tree.inclusionProof(index, size))).toEqual(proof);
      const leaf = leafHash(LEAVES[index]!);
      const root = Buffer.from(ROOTS[size - 1]!, "hex");
      expect(verifyInclusion(leaf, index, size, unhex(proof), root)).toBe(true);
      expect(verifyInclusion(leafHash(Buffer.from("wrong")), index, size, unhex(proof), root)).toBe(false);
      expect(verifyInclusion(leaf, index + 1, size, unhex(proof), root)).toBe(false);
      expect(verifyInclusion(leaf, index, size * 2, unhex(proof), root)).toBe(false);
      expect(verifyInclusion(leaf, index, size, [...unhex(proof), root], root)).toBe(false);
      if (proof.length > 0) {
        expect(verifyInclusion(leaf, index, size, unhex(proof).slice(1), root)).toBe(false);
        expect(verifyInclusion(leaf, index, size, [EMPTY_ROOT, ...unhex(proof).slice(1)], root)).toBe(false);
      }
    }
    expect(rootFromInclusionProof(leafHash(LEAVES[0]!), 0, 0, [])).toBeNull();
    expect(rootFromInclusionProof(leafHash(LEAVES[0]!), 2, 1, [])).toBeNull();
  });

  it("produces and verifies the reference consistency proofs, and refuses altered ones", () => {
    const tree = reference();
    for (const { first, second, proof } of CONSISTENCY) {
      expect(hex(tree.consistencyProof(first, second))).toEqual(proof);
      const a = Buffer.from(ROOTS[first - 1]!, "hex");
      const b = Buffer.from(ROOTS[second - 1]!, "hex");
      expect(verifyConsistency(first, second, a, b, unhex(proof))).toBe(true);
      if (first === second) continue;
      expect(verifyConsistency(first, second, b, a, unhex(proof))).toBe(false);
      expect(verifyConsistency(first - 1, second, a, b, unhex(proof))).toBe(false);
      expect(verifyConsistency(first, second * 2, a, b, unhex(proof))).toBe(false);
      expect(verifyConsistency(first, second, a, b, [])).toBe(false);
      expect(verifyConsistency(first, second, a, b, unhex(proof).slice(0, -1))).toBe(false);
      expect(verifyConsistency(first, second, a, b, [...unhex(proof), a])).toBe(false);
    }
    expect(verifyConsistency(2, 1, EMPTY_ROOT, EMPTY_ROOT, [])).toBe(false);
  });

  it("agrees with the RFC's recursive definition for every size up to 70 and every leaf and prefix", () => {
    const leaves = Array.from({ length: 70 }, (_, i) => leafHash(Buffer.from(`event ${i}`)));
    const tree = new MerkleLevels();
    const range = CompactRange.empty();
    for (const leaf of leaves) {
      tree.append(leaf);
      range.append(leaf);
      const size = tree.size;
      const root = mth(leaves.slice(0, size));
      expect(tree.root(size)).toEqual(root);
      expect(range.root()).toEqual(root);
      expect(CompactRange.fromFrontier(size, range.frontier())!.root()).toEqual(root);
    }
    for (let size = 1; size <= 70; size++) {
      const root = tree.root(size);
      for (let index = 0; index < size; index++) {
        const proof = tree.inclusionProof(index, size);
        expect(verifyInclusion(leaves[index]!, index, size, proof, root)).toBe(true);
        expect(verifyInclusion(leaves[(index + 1) % size]!, index, size, proof, root)).toBe(size === 1);
      }
      for (let first = 1; first <= size; first++) {
        const proof = tree.consistencyProof(first, size);
        expect(verifyConsistency(first, size, tree.root(first), root, proof)).toBe(true);
        if (first < size) expect(verifyConsistency(first, size, mth(leaves.slice(1, first + 1)), root, proof)).toBe(false);
      }
    }
  });

  it("extends a stored frontier exactly as a fresh tree, and refuses one that does not fit its size", () => {
    const leaves = Array.from({ length: 1000 }, (_, i) => leafHash(Buffer.from(String(i))));
    const whole = CompactRange.empty();
    for (const leaf of leaves) whole.append(leaf);
    const part = CompactRange.empty();
    for (const leaf of leaves.slice(0, 613)) part.append(leaf);
    const resumed = CompactRange.fromFrontier(613, part.frontier())!;
    for (const leaf of leaves.slice(613)) resumed.append(leaf);
    expect(resumed.root()).toEqual(whole.root());
    expect(resumed.frontier()).toHaveLength(6); // 1000 = 0b1111101000
    expect(CompactRange.fromFrontier(615, part.frontier())).toBeNull();
    expect(CompactRange.fromFrontier(613, [...part.frontier().slice(1), Buffer.alloc(3)])).toBeNull();
  });

  it("hashes leaves and nodes as the RFC defines them, whatever the length of their input and the input before", () => {
    const sha256 = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();
    const chain = "ab".repeat(32);
    // Each case after a valid one, so that bytes left in a reused input would show.
    for (const text of ["0f".repeat(32), "zz" + "0f".repeat(31), "0f".repeat(31) + "g0", "0f".repeat(16), "0f".repeat(33), ""]) {
      expect(eventLeafHash(chain)).toEqual(sha256(Buffer.from([0]), Buffer.from(chain, "hex")));
      expect(eventLeafHash(text)).toEqual(sha256(Buffer.from([0]), Buffer.from(text, "hex")));
    }
    const a = sha256(Buffer.from("a"));
    const b = sha256(Buffer.from("b"));
    for (const [left, right] of [
      [a, b],
      [b, a],
      [a.subarray(1), b],
      [a, Buffer.concat([b, a])],
      [Buffer.alloc(0), a],
    ] as const) {
      expect(nodeHash(a, b)).toEqual(sha256(Buffer.from([1]), a, b));
      expect(nodeHash(left, right)).toEqual(sha256(Buffer.from([1]), left, right));
    }
  });
});
