/**
 * The one wrapper every console server action and JSON route goes through:
 * parse the input with a closed schema → the signed-in person (read from the database) → the
 * scope → the service function. Server actions are public endpoints, so none skips a step.
 *
 * Guarantees: the result is a plain, typed value — `{ok: true, data}` or `{ok: false, error}` with
 * an AppError code (`forbidden`, `conflict`, …) and its safe message; anything that is not an
 * AppError is logged with its cause on the server and reported as `internal`, never leaked.
 */
import "server-only";
import type { z } from "zod";
import { currentUser, type UserActor } from "@/lib/auth/session";
import { requireScope, type Scope } from "@/lib/auth/scopes";
import { AppError, isAppError, toPublicError, type AppErrorCode } from "@/lib/errors";

export type ActionError = { code: AppErrorCode; message: string; status: number; details?: Record<string, unknown> };
export type ActionResult<T> = { ok: true; data: T } | { ok: false; error: ActionError };

export function userAction<S extends z.ZodType, T>(scope: Scope, schema: S, handler: (actor: UserActor, input: z.output<S>) => Promise<T>) {
  return async (raw: unknown): Promise<ActionResult<T>> => {
    try {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new AppError("bad_request", `${issue?.path.join(".") || "input"}: ${issue?.message ?? "invalid"}`);
      }
      const actor = await currentUser();
      requireScope(actor, scope);
      return { ok: true, data: await handler(actor as UserActor, parsed.data) };
    } catch (error) {
      if (!isAppError(error)) console.error(`action needing ${scope} failed`, error);
      return { ok: false, error: toPublicError(error) };
    }
  };
}
