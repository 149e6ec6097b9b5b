/**
 * Password hashing with argon2id (@node-rs/argon2, OWASP-recommended parameters).
 * Generated passwords come from the OS CSPRNG. Nothing here ever logs a password.
 */
import { hash, verify } from "@node-rs/argon2";
import { randomBytes } from "node:crypto";

// @node-rs/argon2 defaults to argon2id; these are OWASP's minimum recommended costs.
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD_LENGTH = 12;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

/** A password a person can type: 20 characters from an unambiguous alphabet (~114 bits). */
export function generatePassword(): string {
  const alphabet = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  const bytes = randomBytes(20);
  let out = "";
  for (const byte of bytes) out += alphabet[byte % alphabet.length];
  return out;
}
