/**
 * Admin overrides of a tool's facts: the four MCP hints and the data class, as two admins agreed
 * (lib/broker/admin.ts). A hint or data class the override names replaces the upstream's claim
 * (and the config's data class); what it leaves out stays as claimed; an empty override restores
 * the claims. Stored facts are parsed with a closed schema: a stored value that does not parse is
 * `stored_data_invalid`, never silently ignored.
 */
import { z } from "zod";
import { DATA_CLASSES, type DataClass } from "@/lib/contracts/data-classes";
import type { ToolAnnotations } from "@/lib/contracts/tools";
import { AppError } from "@/lib/errors";

export const OVERRIDE_HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const;
export type OverrideHint = (typeof OVERRIDE_HINTS)[number];

export const overrideFactsSchema = z.strictObject({
  annotations: z.strictObject({
    readOnlyHint: z.boolean().optional(),
    destructiveHint: z.boolean().optional(),
    idempotentHint: z.boolean().optional(),
    openWorldHint: z.boolean().optional(),
  }),
  dataClass: z.enum(DATA_CLASSES).optional(),
});
export type OverrideFacts = z.infer<typeof overrideFactsSchema>;

/** Facts read back from a ToolOverride row. */
export function storedOverrideFacts(value: unknown, overrideId: string): OverrideFacts {
  const parsed = overrideFactsSchema.safeParse(value);
  if (!parsed.success) {
    throw new AppError("stored_data_invalid", `Tool override ${overrideId}: the stored facts are malformed.`, { details: { overrideId, column: "facts" } });
  }
  return parsed.data;
}

export type ToolClaims = { annotations: ToolAnnotations; dataClass: DataClass };

/** The facts Airlock relies on: the claims, with what the override names replaced. */
export function applyOverride(claims: ToolClaims, facts: OverrideFacts | null): ToolClaims {
  if (!facts) return claims;
  return { annotations: { ...claims.annotations, ...facts.annotations }, dataClass: facts.dataClass ?? claims.dataClass };
}
