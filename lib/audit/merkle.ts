/**
 * The audit log as a Merkle tree, RFC 6962 §2.1 (as in Certificate Transparency and Trillian;
 * RFC 9162 §2.1 gives the same algorithms): a signed tree head proves an event with a short
 * inclusion proof, and that a later head extends an earlier one with a consistency proof, without
 * handing over any other event.
 *
 * - The leaves are the events in id order; leaf i is the (i+1)-th event, so the tree size is the
 *   number of events. A leaf's data is the event's chain hash (lib/audit/record.ts) as 32 bytes:
 *   that hash already commits to the event's fields and its predecessor, so the tree is built
 *   from the `hash` column alone.
 * - leaf hash = SHA-256(0x00 ‖ leaf), node hash = SHA-256(0x01 ‖ left ‖ right); the tree over n
 *   leaves splits at the largest power of two below n; the empty tree's root is SHA-256("").
 *
 * Guarantees: `CompactRange` keeps only the right-edge frontier (one hash per set bit of the size,
 * at most 64), so extending a tree by k leaves costs about 2k hashes whatever its size;
 * `MerkleLevels` keeps every complete subtree (2n hashes in flat buffers) for proofs; the
 * verification functions accept exactly the proofs RFC 9162 §2.1.3.2 and §2.1.4.2 accept and
 * never throw on hostile input (they return false).
 */
import { createHash, hash } from "node:crypto";

export const HASH_BYTES = 32;
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

export const EMPTY_ROOT = createHash("sha256").digest();

/**
 * The prefixed input of a node hash and of an event's leaf hash, written in place: a tree of a
 * million events hashes about two million of them, and a new buffer for each is a fifth of the time.
 * Hashing is synchronous, so no two hashes share them at once.
 */
const nodeInput = Buffer.alloc(1 + 2 * HASH_BYTES, 0x01);
const eventLeafInput = Buffer.alloc(1 + HASH_BYTES, 0x00);

// One-shot hashes (crypto.hash) of the prefixed bytes: about twice as fast as Hash objects here.
export function leafHash(leaf: Uint8Array): Buffer {
  return hash("sha256", Buffer.concat([LEAF_PREFIX, leaf]), "buffer");
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) return hash("sha256", Buffer.concat([NODE_PREFIX, left, right]), "buffer");
  nodeInput.set(left, 1);
  nodeInput.set(right, 1 + HASH_BYTES);
  return hash("sha256", nodeInput, "buffer");
}

/**
 * The leaf hash of an audit event: its chain hash (64 hex digits) as the leaf's 32 bytes. Text that
 * is not 64 hex digits hashes the bytes Buffer.from(text, "hex") makes of it, as a leaf of that length.
 */
export function eventLeafHash(chainHashHex: string): Buffer {
  if (chainHashHex.length === 2 * HASH_BYTES && eventLeafInput.write(chainHashHex, 1, "hex") === HASH_BYTES) return hash("sha256", eventLeafInput, "buffer");
  return leafHash(Buffer.from(chainHashHex, "hex"));
}

/** The largest power of two strictly below n (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/**
 * The right-edge frontier of a tree: the roots of its maximal complete subtrees, left to right
 * (one per set bit of the size, largest first). Enough to append leaves and to compute the root.
 */
export class CompactRange {
  private constructor(
    private count: number,
    private readonly hashes: Buffer[],
  ) {}

  static empty(): CompactRange {
    return new CompactRange(0, []);
  }

  /** A frontier as stored beside a checkpoint; null when it does not fit the size. */
  static fromFrontier(size: number, frontier: readonly Buffer[]): CompactRange | null {
    if (!Number.isSafeInteger(size) || size < 0 || frontier.length !== popCount(size) || frontier.some((h) => h.length !== HASH_BYTES)) return null;
    return new CompactRange(size, [...frontier]);
  }

  get size(): number {
    return this.count;
  }

  frontier(): Buffer[] {
    return [...this.hashes];
  }

  append(leaf: Buffer): void {
    let hash = leaf;
    // Each trailing 1-bit of the old size is a complete subtree the new leaf completes.
    for (let bits = this.count; bits % 2 === 1; bits = Math.floor(bits / 2)) hash = nodeHash(this.hashes.pop()!, hash);
    this.hashes.push(hash);
    this.count++;
  }

  root(): Buffer {
    if (this.hashes.length === 0) return EMPTY_ROOT;
    let hash = this.hashes[this.hashes.length - 1]!;
    for (let i = this.hashes.length - 2; i >= 0; i--) hash = nodeHash(this.hashes[i]!, hash);
    return hash;
  }
}

function popCount(n: number): number {
  let count = 0;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 2)) count += rest % 2;
  return count;
}

/** A growable array of 32-byte hashes in one buffer (a million Buffer objects would cost ~10× the memory). */
class HashArray {
  private buffer = Buffer.alloc(HASH_BYTES * 1024);
  length = 0;

  push(hash: Uint8Array): void {
    if ((this.length + 1) * HASH_BYTES > this.buffer.length) {
      const grown = Buffer.alloc(this.buffer.length * 2);
      this.buffer.copy(grown);
      this.buffer = grown;
    }
    this.buffer.set(hash, this.length * HASH_BYTES);
    this.length++;
  }

  at(index: number): Buffer {
    return this.buffer.subarray(index * HASH_BYTES, (index + 1) * HASH_BYTES);
  }
}

/**
 * Every complete, aligned subtree of a tree: level j holds the roots of leaves [i·2^j, (i+1)·2^j).
 * Any subtree the RFC's recursion names — hence any root, inclusion or consistency proof for a
 * size up to `size` — is a lookup or a few hashes over these.
 */
export class MerkleLevels {
  private readonly levels: HashArray[] = [new HashArray()];

  get size(): number {
    return this.levels[0]!.length;
  }

  append(leaf: Buffer): void {
    let hash: Buffer = leaf;
    let level = 0;
    for (;;) {
      const row = this.levels[level]!;
      row.push(hash);
      if (row.length % 2 === 1) return;
      hash = nodeHash(row.at(row.length - 2), row.at(row.length - 1));
      level++;
      if (!this.levels[level]) this.levels.push(new HashArray());
    }
  }

  leaf(index: number): Buffer {
    return Buffer.from(this.levels[0]!.at(index));
  }

  /** MTH(D[start:end]). */
  subtree(start: number, end: number): Buffer {
    const n = end - start;
    if (n === 0) return EMPTY_ROOT;
    if (isPowerOfTwo(n) && start % n === 0) {
      const level = Math.log2(n);
      return Buffer.from(this.levels[level]!.at(start / n));
    }
    const k = splitPoint(n);
    return nodeHash(this.subtree(start, start + k), this.subtree(start + k, end));
  }

  root(size: number): Buffer {
    this.checkSize(size);
    return this.subtree(0, size);
  }

  /** PATH(index, D[size]) of RFC 6962 §2.1.1: the sibling hashes from the leaf up. */
  inclusionProof(index: number, size: number): Buffer[] {
    this.checkSize(size);
    if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
    const path: Buffer[] = [];
    const walk = (m: number, start: number, end: number): void => {
      const n = end - start;
      if (n === 1) return;
      const k = splitPoint(n);
      if (m < k) {
        walk(m, start, start + k);
        path.push(this.subtree(start + k, end));
      } else {
        walk(m - k, start + k, end);
        path.push(this.subtree(start, start + k));
      }
    };
    walk(index, 0, size);
    return path;
  }

  /** PROOF(first, D[second]) of RFC 6962 §2.1.2; empty when the sizes are equal. */
  consistencyProof(first: number, second: number): Buffer[] {
    this.checkSize(second);
    if (!(first > 0 && first <= second)) throw new RangeError(`no consistency proof from ${first} to ${second}`);
    const proof: Buffer[] = [];
    const walk = (m: number, start: number, end: number, whole: boolean): void => {
      const n = end - start;
      if (m === n) {
        if (!whole) proof.push(this.subtree(start, end));
        return;
      }
      const k = splitPoint(n);
      if (m <= k) {
        walk(m, start, start + k, whole);
        proof.push(this.subtree(start + k, end));
      } else {
        walk(m - k, start + k, end, false);
        proof.push(this.subtree(start, start + k));
      }
    };
    walk(first, 0, second, true);
    return proof;
  }

  private checkSize(size: number): void {
    if (!(Number.isSafeInteger(size) && size >= 0 && size <= this.size)) throw new RangeError(`tree size ${size} is beyond the ${this.size} leaves held`);
  }
}

/** The root an inclusion proof leads to (RFC 9162 §2.1.3.2), or null when the proof cannot be one. */
export function rootFromInclusionProof(leaf: Buffer, index: number, size: number, proof: readonly Buffer[]): Buffer | null {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (p.length !== HASH_BYTES || sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

export function verifyInclusion(leaf: Buffer, index: number, size: number, proof: readonly Buffer[], root: Buffer): boolean {
  const computed = rootFromInclusionProof(leaf, index, size, proof);
  return computed !== null && computed.equals(root);
}

/** RFC 9162 §2.1.4.2: does the tree of `second` leaves with `secondRoot` extend the one of `first` with `firstRoot`? */
export function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: readonly Buffer[]): boolean {
  if (!(Number.isSafeInteger(first) && Number.isSafeInteger(second) && first >= 0 && first <= second)) return false;
  if (proof.some((p) => p.length !== HASH_BYTES)) return false;
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (first === 0) return proof.length === 0; // the empty tree is a prefix of every tree
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}
