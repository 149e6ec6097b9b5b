/**
 * The signed-in person as an Actor, read from the database on every call: the session cookie
 * only says who, never what they may do. Pages, routes and actions reach it through their wrappers
 * (userPage and userRoute in lib/auth/user-route.ts, userAction in lib/auth/user-action.ts).
 *
 * Refuses (answers null, as for anyone anonymous): a session without a session version, or of a
 * version other than the person's current one (they signed out since, on any device), and a
 * disabled or deleted person.
 */
import "server-only";
import { prisma } from "@/lib/db";
import { auth } from "./next-auth";
import type { Actor } from "@/lib/contracts/scopes";

export type UserActor = Extract<Actor, { type: "user" }>;

export async function currentUser(): Promise<(UserActor & { name: string }) | null> {
  const session = await auth();
  const id = session?.user?.id;
  const version = session?.sessionVersion;
  if (!id || typeof version !== "number") return null;
  const user = await prisma().user.findUnique({ where: { id } });
  if (!user || user.disabledAt || user.sessionVersion !== version) return null;
  return { type: "user", id: user.id, email: user.email, role: user.role, name: user.name };
}
