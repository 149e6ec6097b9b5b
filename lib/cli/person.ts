/**
 * `--as EMAIL`: the person a four-eyes CLI command (policy propose and approve, tools accept) acts
 * as. The actor is the user row as it is now (role read from the database, as the console does on
 * every request), so the services apply the console's rules to it: an admin proposes or asks, a
 * different admin approves or confirms. It proves nothing about who typed the command — whoever
 * runs the CLI has the host's database credentials — but every step is audited under that name.
 *
 * Refuses unknown emails (not_found) and disabled users (forbidden). A refusal of the person by
 * the service is recorded as `auth.forbidden` with the door `cli:<command>`, as the console's
 * doors record theirs.
 */
import { recordForbidden } from "@/lib/audit/access";
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";

export async function actingAs<T>(db: Db, email: string, door: string, fn: (actor: Actor) => Promise<T>): Promise<T> {
  const user = await db.user.findUnique({ where: { email: email.trim().toLowerCase() } });
  if (!user) throw new AppError("not_found", `No user with email ${email}.`);
  const actor: Actor = { type: "user", id: user.id, email: user.email, role: user.role };
  if (user.disabledAt) {
    const error = new AppError("forbidden", `${user.email} is disabled.`, { details: { reason: "user_disabled" } });
    await recordForbidden(db, actor, error, door);
    throw error;
  }
  try {
    return await fn(actor);
  } catch (error) {
    await recordForbidden(db, actor, error, door);
    throw error;
  }
}
