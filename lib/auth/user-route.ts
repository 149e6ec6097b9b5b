/**
 * The console user's edges besides server actions (lib/auth/user-action.ts): JSON route handlers
 * (`userRoute`) and pages (`userPage`). Both authenticate the signed-in person (read from the
 * database on every call, lib/auth/session.ts), check the scope, and turn an AppError into what
 * that edge can say — never a 500 for an AppError that is not a server fault.
 *
 * userRoute(scope, handler, {query}): the handler returns a Response, or a value sent as JSON
 * (no-store). The query string is closed: a parameter the route does not name in `query` (none
 * by default), one given twice, or a value PostgreSQL cannot store (U+0000) is `bad_request`
 * naming it, before the handler runs.
 * A failure is `{error: {code, message, status, details?}}` (toPublicError) with its HTTP status;
 * anything that is not an AppError is logged and reported as `internal` without its message.
 *
 * userPage(scope, render): Next can give a page only the statuses of its interrupts, so
 * - anonymous and `unauthorized` → /login?from=<the page> (lib/auth/sign-in-redirect.ts);
 * - `forbidden` (the scope, or a service's rule) → forbidden(): 403, app/forbidden.tsx;
 * - `not_found` → notFound(): 404, app/not-found.tsx;
 * - other 4xx AppErrors (bad_request, conflict, payload_too_large, rate_limited) → the page
 *   renders the error's code and message (in production too: the message is rendered on the
 *   server, not thrown to the client, where Next would hide it);
 * - 5xx AppErrors and anything else are rethrown: app/error.tsx shows a reference (the digest).
 *
 * A refusal (AppError "forbidden") is audited as `auth.forbidden` with the door: `api:<path>`
 * unless the route names it, `page` for pages (lib/audit/access.ts).
 */
import "server-only";
import { createElement, type ReactNode } from "react";
import { forbidden, notFound } from "next/navigation";
import { NextResponse, type NextRequest } from "next/server";
import { recordForbidden } from "@/lib/audit/access";
import { currentUser, type UserActor } from "@/lib/auth/session";
import { redirectToSignIn } from "@/lib/auth/sign-in-redirect";
import { requireScope, type Scope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { AppError, isAppError, toPublicError } from "@/lib/errors";
import { findUnstorable } from "@/lib/untrusted/storable-text";
import { closedNames } from "./closed-names";

type Signed = UserActor & { name: string };

export function userRoute<Context = unknown>(
  scope: Scope,
  handler: (user: Signed, request: NextRequest, context: Context) => Promise<Response | object>,
  options: { door?: string; query?: readonly string[] } = {},
) {
  return async (request: NextRequest, context: Context): Promise<Response> => {
    let user: Signed | null = null;
    try {
      user = await currentUser();
      requireScope(user, scope);
      refuseQuery(request.nextUrl.searchParams, options.query ?? []);
      const answer = await handler(user, request, context);
      return answer instanceof Response ? answer : NextResponse.json(answer, { headers: { "cache-control": "no-store" } });
    } catch (error) {
      const door = options.door ?? `api:${request.nextUrl.pathname}`;
      await recordForbidden(prisma(), user, error, door);
      const failure = toPublicError(error);
      if (!isAppError(error) || failure.status >= 500) console.error(`${request.method} ${request.nextUrl.pathname} failed`, error);
      return NextResponse.json({ error: failure }, { status: failure.status, headers: { "cache-control": "no-store" } });
    }
  };
}

/** A parameter the route does not take, one given twice, or a value with U+0000: `bad_request` naming it (and what the route takes). */
function refuseQuery(params: URLSearchParams, takes: readonly string[]): void {
  const found = closedNames(params.keys(), (key) => takes.includes(key));
  if (found) {
    const shown = JSON.stringify(found.name.slice(0, 64));
    const known = takes.length > 0 ? `it takes ${takes.join(", ")}` : "it takes no parameters";
    throw new AppError(
      "bad_request",
      found.problem === "unknown" ? `${shown} is not a parameter of this address; ${known}.` : `${shown} is given more than once; give it once.`,
    );
  }
  for (const [key, value] of params) {
    const unstorable = findUnstorable(value, key);
    if (unstorable)
      throw new AppError("bad_request", `${JSON.stringify(key.slice(0, 64))} holds ${unstorable.character}, a character that cannot be stored or searched.`);
  }
}

/** What a page shows for a 4xx AppError. */
export function AppErrorNotice({ error }: { error: Pick<AppError, "code" | "message"> }): ReactNode {
  return createElement(
    "section",
    { role: "alert", "data-testid": "app-error", "data-code": error.code, className: "mx-auto max-w-lg px-6 py-24 text-center" },
    createElement("p", { className: "text-sm font-semibold text-red-700" }, error.code.replaceAll("_", " ")),
    createElement("p", { className: "mt-2 text-slate-700" }, error.message),
  );
}

export function userPage<Props>(scope: Scope, render: (user: Signed, props: Props) => Promise<ReactNode>) {
  return async function UserPage(props: Props): Promise<ReactNode> {
    const user = await currentUser();
    if (!user) return redirectToSignIn();
    try {
      requireScope(user, scope);
      return await render(user, props);
    } catch (error) {
      // Next's own interrupts (notFound, redirect, …) and non-AppErrors pass through untouched.
      if (!isAppError(error)) throw error;
      if (error.code === "unauthorized") return redirectToSignIn();
      if (error.code === "forbidden") {
        await recordForbidden(prisma(), user, error, "page");
        forbidden();
      }
      if (error.code === "not_found") notFound();
      if (error.status >= 500) throw error;
      return createElement(AppErrorNotice, { error });
    }
  };
}
