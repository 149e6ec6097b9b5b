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
import { closedNames } from "./closed-names";

export type ActionError = { code: AppErrorCode; message: string; status: number; details?: Record<string, unknown> };
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };

/**
 * A server action's form argument, closed like every other input. A server action is a public
 * endpoint and a client may send it any value: anything but a FormData reads as an empty form,
 * which the action's closed schema then refuses — never a TypeError and a 500. A field its form
 * does not have (`fields`; a RegExp names a family, such as `argName-3`) or a field sent twice
 * (only `lists`, checkboxes, may repeat) is refused as `bad_request` naming it: a value the action
 * would silently ignore, or one of two it would silently choose between, is a guess. React's own
 * `$ACTION_…` fields (a form sent before the page's script ran) are not the form's.
 */
export function actionForm(
  sent: unknown,
  fields: readonly (string | RegExp)[],
  lists: readonly string[] = [],
): { ok: true; form: FormData } | { ok: false; error: ActionError } {
  const form = sent instanceof FormData ? sent : new FormData();
  const found = closedNames(
    [...form.keys()].filter((name) => !name.startsWith("$ACTION")),
    (name) => fields.some((field) => (typeof field === "string" ? field === name : field.test(name))),
    (name) => lists.includes(name),
  );
  if (!found) return { ok: true, form };
  const shown = JSON.stringify(found.name.slice(0, 64));
  const message = found.problem === "unknown" ? `${shown} is not a field of this form.` : `${shown} is sent more than once; a form sends each field once.`;
  return { ok: false, error: toPublicError(new AppError("bad_request", message)) };
}

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
