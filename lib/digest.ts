/**
 * The digests Airlock stores and compares: sha256 as lowercase hex, and the digest of a JSON value
 * over its canonical form (lib/canonical-json.ts), so equal values always have equal digests
 * whatever their key order. Used for code hashes, tool-call arguments and results, seals, dataset
 * contents, policy set ids and token hashes.
 */
import { hash } from "node:crypto";
import { canonicalJson } from "@/lib/canonical-json";

/** One-shot (crypto.hash): about twice as fast as a Hash object for the short inputs digested here. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash("sha256", data, "hex");
}

/** sha256 over the canonical JSON of `value`; `undefined` digests like `null`. */
export function jsonDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value ?? null));
}
