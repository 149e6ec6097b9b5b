/**
 * The closed schemas' rule for text people send to the console (URL filters, form fields, JSON
 * bodies): `storableString()` is a zod string that refuses what PostgreSQL cannot store — U+0000
 * and lone surrogates (lib/untrusted/storable-text.ts) — naming the character, so the door answers
 * a typed 400 or a form error instead of failing in the database with a 500. Refused, never
 * repaired: a person's input is theirs to fix.
 */
import { z } from "zod";
import { unstorableCharacter } from "./storable-text";

export function storableString() {
  return z.string().refine((value) => unstorableCharacter(value) === null, {
    error: (issue) => `contains ${unstorableCharacter(String(issue.input))}, a character that cannot be stored`,
  });
}
