/**
 * What an upstream may say about a tool so that Airlock can preview it, in the tool's `_meta`:
 *
 * - `"dev.airlock/preview"`: the answer a preview gives instead of calling the tool, as a JSON
 *   template. A string `"$args/<pointer>"` becomes the argument at that JSON Pointer; the string
 *   `"$placeholder"` becomes a symbolic placeholder for a value only the real call can know (an id
 *   the upstream will assign). Everything else is taken as written.
 * - `"dev.airlock/money"`: where the money of a call is, as JSON Pointers into its arguments (or
 *   into the preview answer with `"from": "answer"`): `amount` (required), `currency`, `subject`
 *   (what the money is for, such as an invoice id) and `unit` (`"minor"` for cents, the default,
 *   or `"major"`).
 *
 * Both are checked with closed schemas when the broker lists the tool; a malformed hint is dropped
 * (the tool then previews from its outputSchema and shows no money), never trusted in part.
 */
import { z } from "zod";

export const PREVIEW_META_KEY = "dev.airlock/preview";
export const MONEY_META_KEY = "dev.airlock/money";

const pointer = z.string().regex(/^(\/[^/]*)*$/, "a JSON Pointer such as /amountMinor");

export const moneyHintSchema = z
  .object({
    amount: pointer,
    currency: pointer.optional(),
    subject: pointer.optional(),
    unit: z.enum(["minor", "major"]).default("minor"),
    from: z.enum(["arguments", "answer"]).default("arguments"),
  })
  .strict();

export type MoneyHint = z.infer<typeof moneyHintSchema>;

export type PreviewHints = {
  /** The preview answer template, if the upstream declared one. */
  answer: unknown;
  money: MoneyHint | null;
};

/** The hints of a tool's `_meta`, or null when it declares none. Malformed parts are dropped. */
export function previewHintsOf(meta: unknown): PreviewHints | null {
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) return null;
  const record = meta as Record<string, unknown>;
  const answer = Object.hasOwn(record, PREVIEW_META_KEY) ? record[PREVIEW_META_KEY] : undefined;
  const money = moneyHintSchema.safeParse(record[MONEY_META_KEY]);
  if (answer === undefined && !money.success) return null;
  return { answer, money: money.success ? money.data : null };
}
