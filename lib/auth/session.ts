/**
 * The signed-in person as an Actor, read from the database on every call: the session cookie
 * only says who, never what they may do. Pages and actions call requireUser(scope) first.
 */
import "server-only";
import { forbidden, redirect } from "next/navigation";
import { recordForbidden } from "@/lib/audit/access";
import { prisma } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { auth } from "./next-auth";
import { requireScope, type Actor, type Scope } from "@/lib/contracts/scopes";

export type UserActor = Extract<Actor, { type: "user" }>;

export async function currentUser(): Promise<(UserActor & { name: string }) | null> {
  const session = await auth();
  const id = session?.user?.id;
  if (!id) return null;
  const user = await prisma().user.findUnique({ where: { id } });
  if (!user || user.disabledAt) return null;
  return { type: "user", id: user.id, email: user.email, role: user.role, name: user.name };
}

/** For pages: anonymous visitors go to /login; a missing scope is a 403 (see app/forbidden.tsx), audited as auth.forbidden. */
export async function requireUserPage(scope: Scope): Promise<UserActor & { name: string }> {
  const user = await currentUser();
  if (!user) redirect("/login");
  try {
    requireScope(user, scope);
  } catch (error) {
    if (error instanceof AppError && error.code === "forbidden") {
      await recordForbidden(prisma(), user, error, "page");
      forbidden();
    }
    throw error;
  }
  return user;
}
