/**
 * The one wrapper every console server action and JSON route goes through:
 * parse the input with a closed schema → the signed-in person (read from the database) → the
 * scope → the service function. Server actions are public endpoints, so none skips a step.
 * Before any schema, text PostgreSQL cannot store (U+0000, a lone surrogate) anywhere in the input
 * is refused as `bad_request` naming the field — one rule for every action, so no action's
 * database write fails with a 500 on it.
 *
 * Guarantees: the result is a plain, typed value — `{ok: true, data}` or `{ok: false, error}` with
 * an AppError code (`forbidden`, `conflict`, …) and its safe message; anything that is not an
 * AppError is logged with its cause on the server and reported as `internal`, never leaked.
 * A signed-in person refused (AppError "forbidden", by the scope check or by the service) is
 * audited as `auth.forbidden` with the door (`action:<page path>` unless the caller names it).
 */
import "server-only";
import { headers } from "next/headers";
import type { z } from "zod";
import { recordForbidden } from "@/lib/audit/access";
import { currentUser, type UserActor } from "@/lib/auth/session";
import { requireScope, type Scope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { AppError, isAppError, toPublicError, type AppErrorCode } from "@/lib/errors";
import { findUnstorable } from "@/lib/untrusted/storable-text";

/**
 * A server action's form argument as a form sent it. A server action is a public endpoint and a
 * client may send it any value; anything but a FormData reads as an empty form, which the
 * action's closed schema then refuses with `bad_request` — never a TypeError and a 500.
 */
export function actionForm(sent: unknown): FormData {
  return sent instanceof FormData ? sent : new FormData();
}

export type ActionError = { code: AppErrorCode; message: string; status: number; details?: Record<string, unknown> };
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };

/** `action:<path of the page it was sent from>` (the Referer's path; a label, not a proof), or `action`. */
async function actionDoor(): Promise<string> {
  try {
    const referer = (await headers()).get("referer");
    return referer ? `action:${new URL(referer).pathname}` : "action";
  } catch {
    return "action";
  }
}

export function userAction<S extends z.ZodType, T>(
  scope: Scope,
  schema: S,
  handler: (actor: UserActor, input: z.output<S>) => Promise<T>,
  options: { door?: string } = {},
) {
  return async (raw: unknown): Promise<ActionResult<T>> => {
    let actor: UserActor | null = null;
    try {
      const unstorable = findUnstorable(raw, "input");
      if (unstorable) {
        const field = unstorable.path.replace(/^input\.?/, "").trim() || "input";
        throw new AppError("bad_request", `${field}: contains ${unstorable.character}, a character that cannot be stored`, {
          details: { field, character: unstorable.character },
        });
      }
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new AppError("bad_request", `${issue?.path.join(".") || "input"}: ${issue?.message ?? "invalid"}`);
      }
      actor = await currentUser();
      requireScope(actor, scope);
      return { ok: true, data: await handler(actor, parsed.data) };
    } catch (error) {
      if (!isAppError(error)) console.error(`action needing ${scope} failed`, error);
      if (actor && isAppError(error) && error.code === "forbidden") await recordForbidden(prisma(), actor, error, options.door ?? (await actionDoor()));
      return { ok: false, error: toPublicError(error) };
    }
  };
}
