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
