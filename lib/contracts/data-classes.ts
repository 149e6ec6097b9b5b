/**
 * Data classes: the one list (the Prisma enum DataClass has the same values, checked by the
 * compiler below) and the one definition of "regulated", shared by analysis, the broker's
 * configuration, datasets, the audit of regulated reads and the console. The shipped Cedar
 * policies name the same regulated classes in their text.
 */
import type { DataClass as PrismaDataClass } from "@/lib/generated/prisma/enums";

export const DATA_CLASSES = ["public", "internal", "confidential", "pii", "financial", "phi"] as const satisfies readonly PrismaDataClass[];
export type DataClass = (typeof DATA_CLASSES)[number];

/** Classes whose reads are audited and which the shipped policies send to two reviewers. */
export const REGULATED_DATA_CLASSES = ["pii", "financial", "phi"] as const satisfies readonly DataClass[];

/** True if any class is regulated; a class name Airlock does not know counts as regulated. */
export function touchesRegulatedData(classes: Iterable<string>): boolean {
  for (const value of classes) {
    if (!(DATA_CLASSES as readonly string[]).includes(value) || (REGULATED_DATA_CLASSES as readonly string[]).includes(value)) return true;
  }
  return false;
}

/**
 * Kinds of personal data a model sees only as tokens (`<EMAIL_1>`): detected in any text
 * (lib/untrusted/pii.ts: EMAIL, PHONE, IBAN, CARD), or marked in a tool's results and arguments by
 * the config's `piiFields` (all five; names only ever come from there).
 */
export const PII_TOKEN_KINDS = ["EMAIL", "NAME", "PHONE", "IBAN", "CARD"] as const;
export type PiiTokenKind = (typeof PII_TOKEN_KINDS)[number];

/** A field path into a tool's result or arguments: `customers[].email`, `customer.name`, `to`. */
export const PII_FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(\[\])?(\.[A-Za-z_][A-Za-z0-9_]{0,63}(\[\])?){0,7}$/;
