/**
 * Signed checkpoints of the audit chain, kept outside the database (docs/audit.md, "Signed checkpoints").
 *
 * A checkpoint is a small JSON file naming the chain head at one moment — event id, its hash and
 * time — and the signed tree head of the log as a Merkle tree (lib/audit/merkle.ts: tree size =
 * the number of events up to that one, root hash), signed with an Ed25519 key. Beside the signed
 * head it keeps the tree's right-edge frontier (unsigned, but it must fold to the signed root), so
 * the next checkpoint extends the tree by the events appended since, not by recomputing it.
 * Whoever can rewrite the whole "AuditEvent" table (a superuser, a restored dump) can recompute
 * every hash, but cannot re-sign the checkpoints without the key, and does not reach the
 * checkpoint directory through the database. Verification (verify.ts) requires every checkpoint's
 * event to still exist with the same hash, and its tree head to be the tree recomputed from the
 * events; evidence files (evidence.ts) prove events against these heads.
 *
 * Guarantees:
 * - the key is read from AIRLOCK_AUDIT_KEY_FILE (default <AIRLOCK_DATA_DIR>/audit-signing-key.pem);
 *   when the file does not exist it is generated once (PKCS#8 PEM, mode 0600, created exclusively
 *   so two processes cannot both write one);
 * - files go to AIRLOCK_AUDIT_CHECKPOINT_DIR (default <AIRLOCK_DATA_DIR>/audit-checkpoints), one
 *   per checkpoint, created exclusively (an existing checkpoint is never overwritten);
 * - loadCheckpoints() returns every file, each marked valid only if it parses, is signed by *this*
 *   key (its key id matches), the signature verifies and (version 2) its frontier folds to its
 *   root. Version 1 files (written before tree heads existed: chain head only) stay valid; they
 *   carry no tree.
 *
 * Refuses / does not do: key rotation (a checkpoint signed by another key is reported invalid,
 * not trusted); protecting the key file itself — keep it, or the directory, on storage the database
 * administrator cannot write (see docs/audit.md). Events appended after the newest checkpoint are
 * protected by the hash chain only, so checkpoints are signed every CHECKPOINT_INTERVAL_MINUTES
 * in which events were appended (and by every clean verification, and before every evidence
 * export); verification reports them missing when an event older than CHECKPOINT_MAX_UNCOVERED_MS
 * is covered by none.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { makeDirectory } from "@/lib/make-directory";
import { z } from "zod";
import { env } from "@/lib/env";
import { canonicalJson } from "@/lib/canonical-json";
import { CompactRange } from "./merkle";

export type CheckpointConfig = { keyFile: string; dir: string };

/**
 * How often the run queue's cron runs the checkpoint job (lib/runs/queue.ts); a run that finds
 * nothing appended since the newest checkpoint signs nothing and records nothing.
 */
export const CHECKPOINT_INTERVAL_MINUTES = 1;
/**
 * An event older than this that no checkpoint covers means checkpoints are missing (verify.ts):
 * three intervals, so one late or failed checkpoint run is not an alarm.
 */
export const CHECKPOINT_MAX_UNCOVERED_MS = 3 * CHECKPOINT_INTERVAL_MINUTES * 60_000;

export function checkpointConfigFromEnv(): CheckpointConfig {
  const config = env();
  // turbopackIgnore: runtime paths from configuration; without it Next traces the whole project.
  const dataDir = resolve(/*turbopackIgnore: true*/ config.AIRLOCK_DATA_DIR);
  return {
    keyFile: resolve(/*turbopackIgnore: true*/ config.AIRLOCK_AUDIT_KEY_FILE ?? join(dataDir, "audit-signing-key.pem")),
    dir: resolve(/*turbopackIgnore: true*/ config.AIRLOCK_AUDIT_CHECKPOINT_DIR ?? join(dataDir, "audit-checkpoints")),
  };
}

export type SigningKey = { privateKey: KeyObject; publicKey: KeyObject; keyId: string };

/** The signing key, generated on first use. A key file that cannot be read or is no Ed25519 key is an error naming it. */
export async function loadSigningKey(keyFile: string): Promise<SigningKey> {
  const unusable = (why: string, cause?: unknown) =>
    new Error(`the audit signing key ${keyFile} (AIRLOCK_AUDIT_KEY_FILE) ${why}; restore the key file, or point AIRLOCK_AUDIT_KEY_FILE at it`, { cause });
  let pem: string;
  try {
    pem = await readFile(keyFile, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw unusable(`cannot be read (${(error as Error).message})`, error);
    const { privateKey } = generateKeyPairSync("ed25519");
    await makeDirectory(dirname(keyFile), 0o700);
    try {
      await writeFile(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" });
    } catch (writeError) {
      if ((writeError as NodeJS.ErrnoException).code !== "EEXIST") throw writeError;
    }
    pem = await readFile(keyFile, "utf8"); // whoever won the race, everyone uses the file's key
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (error) {
    throw unusable(`is not a PEM private key (${(error as Error).message})`, error);
  }
  if (privateKey.asymmetricKeyType !== "ed25519") throw unusable(`is not an Ed25519 private key`);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

const HEX64 = z.string().regex(/^[0-9a-f]{64}$/);
const ISO_TIME = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

const chainHeadFileSchema = z
  .object({
    version: z.literal(1),
    eventId: z.string().regex(/^\d+$/),
    hash: HEX64,
    at: z.string(),
    signedAt: z.string(),
    keyId: z.string(),
    signature: z.string(),
  })
  .strict();

/** A signed tree head: what a checkpoint signs, and what an evidence file carries. */
export const treeHeadSchema = z
  .object({
    version: z.literal(2),
    /** The newest event in the tree, its chain hash and time. */
    eventId: z.string().regex(/^[1-9]\d{0,18}$/),
    hash: HEX64,
    at: ISO_TIME,
    /** The number of events up to and including eventId: the Merkle tree's size. */
    treeSize: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    rootHash: HEX64,
    signedAt: ISO_TIME,
    keyId: z.string().regex(/^[0-9a-f]{16}$/),
    signature: z.string().regex(/^[A-Za-z0-9+/]{86}==$/),
  })
  .strict();

export type TreeHead = z.infer<typeof treeHeadSchema>;

const treeHeadFileSchema = treeHeadSchema.extend({ frontier: z.array(HEX64).max(64) }).strict();

const fileSchema = z.union([chainHeadFileSchema, treeHeadFileSchema]);

export type Checkpoint = z.infer<typeof fileSchema>;
export type LoadedCheckpoint = { file: string; valid: true; checkpoint: Checkpoint } | { file: string; valid: false; eventId: string | null; problem: string };

/** The tree state a checkpoint carries. */
export type TreeState = { size: number; root: Buffer; frontier: Buffer[] };

function signedPayload(c: Omit<z.infer<typeof chainHeadFileSchema>, "signature"> | Omit<TreeHead, "signature">): Buffer {
  const head = { version: c.version, eventId: c.eventId, hash: c.hash, at: c.at, signedAt: c.signedAt, keyId: c.keyId };
  return Buffer.from(canonicalJson(c.version === 2 ? { ...head, treeSize: c.treeSize, rootHash: c.rootHash } : head));
}

/** The 16-hex-digit id of a public key (sha256 of its SPKI DER), as checkpoints name their signer. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash("sha256")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest("hex")
    .slice(0, 16);
}

/** Does the signature of a tree head verify with `publicKey`? (Signer and key id are checked separately.) */
export function treeHeadSignatureValid(head: TreeHead, publicKey: KeyObject): boolean {
  try {
    return verify(null, signedPayload(head), publicKey, Buffer.from(head.signature, "base64"));
  } catch {
    return false;
  }
}

/** The signed tree head of a version 2 checkpoint (without its frontier); null for version 1. */
export function treeHeadOf(checkpoint: Checkpoint): TreeHead | null {
  if (checkpoint.version !== 2) return null;
  const { frontier: _frontier, ...head } = checkpoint;
  return head;
}

/** The tree a version 2 checkpoint carries, its frontier checked against its signed root; null when it has none that fits. */
export function treeStateOf(checkpoint: Checkpoint): TreeState | null {
  if (checkpoint.version !== 2) return null;
  const range = CompactRange.fromFrontier(
    checkpoint.treeSize,
    checkpoint.frontier.map((h) => Buffer.from(h, "hex")),
  );
  if (!range || range.root().toString("hex") !== checkpoint.rootHash) return null;
  return { size: range.size, root: range.root(), frontier: range.frontier() };
}

/** Writes a checkpoint of `head` and the tree over every event up to it; returns its path. */
export async function writeCheckpoint(
  config: CheckpointConfig,
  head: { id: bigint | string; hash: string; at: Date | string },
  tree: TreeState,
): Promise<{ file: string; checkpoint: Checkpoint }> {
  const key = await loadSigningKey(config.keyFile);
  const unsigned = {
    version: 2 as const,
    eventId: String(head.id),
    hash: head.hash,
    at: typeof head.at === "string" ? head.at : head.at.toISOString(),
    treeSize: tree.size,
    rootHash: tree.root.toString("hex"),
    signedAt: new Date().toISOString(),
    keyId: key.keyId,
  };
  const checkpoint: Checkpoint = {
    ...unsigned,
    signature: sign(null, signedPayload(unsigned), key.privateKey).toString("base64"),
    frontier: tree.frontier.map((h) => h.toString("hex")),
  };
  await makeDirectory(config.dir, 0o700);
  const file = join(config.dir, `checkpoint-${unsigned.eventId.padStart(20, "0")}-${unsigned.signedAt.replace(/[-:.]/g, "")}.json`);
  await writeFile(file, JSON.stringify(checkpoint, null, 2) + "\n", { mode: 0o644, flag: "wx" });
  return { file, checkpoint };
}

/**
 * One checkpoint file's text, checked against `publicKey`: it parses as a checkpoint, is signed by
 * that key (its key id matches) with a signature that verifies, and (version 2) its frontier folds
 * to its signed root; otherwise the problem, with the event id the file claims.
 */
export function checkCheckpoint(
  text: string,
  publicKey: KeyObject,
): { valid: true; checkpoint: Checkpoint } | { valid: false; eventId: string | null; problem: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { valid: false, eventId: null, problem: "not valid JSON" };
  }
  const parsed = fileSchema.safeParse(raw);
  const claimedId = typeof (raw as { eventId?: unknown })?.eventId === "string" ? String((raw as { eventId: string }).eventId) : null;
  if (!parsed.success) return { valid: false, eventId: claimedId, problem: "not a checkpoint file" };
  const checkpoint = parsed.data;
  const keyId = keyIdOf(publicKey);
  if (checkpoint.keyId !== keyId)
    return { valid: false, eventId: checkpoint.eventId, problem: `signed by another key (${checkpoint.keyId}, expected ${keyId})` };
  let signed = false;
  try {
    signed = verify(null, signedPayload(checkpoint), publicKey, Buffer.from(checkpoint.signature, "base64"));
  } catch {
    // A key of another type than Ed25519: no signature of ours verifies with it.
  }
  if (!signed) return { valid: false, eventId: checkpoint.eventId, problem: "signature does not verify" };
  if (checkpoint.version === 2 && !treeStateOf(checkpoint))
    return { valid: false, eventId: checkpoint.eventId, problem: "its frontier does not fold to its signed root" };
  return { valid: true, checkpoint };
}

/** Every checkpoint file in the directory, ordered by event id; invalid ones are returned as such. */
export async function loadCheckpoints(config: CheckpointConfig): Promise<LoadedCheckpoint[]> {
  let names: string[];
  try {
    names = (await readdir(config.dir)).filter((name) => name.endsWith(".json"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new Error(`the audit checkpoint directory ${config.dir} (AIRLOCK_AUDIT_CHECKPOINT_DIR) cannot be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const key = await loadSigningKey(config.keyFile);
  const loaded: LoadedCheckpoint[] = [];
  for (const name of names) {
    const file = join(config.dir, name);
    const text = await readFile(file, "utf8").catch(() => null);
    loaded.push({ file, ...(text === null ? { valid: false, eventId: null, problem: "cannot be read" } : checkCheckpoint(text, key.publicKey)) });
  }
  const idOf = (c: LoadedCheckpoint) => BigInt(c.valid ? c.checkpoint.eventId : (c.eventId ?? "0"));
  return loaded.sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
}
