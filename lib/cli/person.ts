/**
 * Who a CLI command acts as.
 *
 * `cliActor(db, asEmail?)`, for every command that records an actor (audit export, verify,
 * checkpoint…): with `--as EMAIL`, that person — an existing user who is not disabled, else
 * not_found or forbidden (exit 1, one line, as actingAs; the command has checked that --as is an
 * email, ./io.ts emailFlag; a disabled user's attempt is also recorded as `auth.forbidden`, door `cli`); without it, the
 * system actor `cli:<os user>@<host>` (os.userInfo(), os.hostname();
 * characters outside [A-Za-z0-9._-] become "_", each part at most 64 characters, "unknown" when
 * the system cannot say), so the log names the account that ran it rather than just "cli".
 * The services then apply the person's scopes, as the console does.
 *
 * `actingAs`: the person a four-eyes CLI command (policy propose and approve, tools accept) acts
 * as. The actor is the user row as it is now (role read from the database, as the console does on
 * every request), so the services apply the console's rules to it: an admin proposes or asks, a
 * different admin approves or confirms. It proves nothing about who typed the command — whoever
 * runs the CLI has the host's database credentials — but every step is audited under that name.
 *
 * Refuses unknown emails (not_found) and disabled users (forbidden). A refusal of the person by
 * the service is recorded as `auth.forbidden` with the door `cli:<command>`, as the console's
 * doors record theirs.
 */
import { hostname, userInfo } from "node:os";
import { recordForbidden } from "@/lib/audit/access";
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";

function label(value: () => string): string {
  let text = "";
  try {
    text = value();
  } catch {
    // userInfo() throws for a uid without a passwd entry (containers).
  }
  return text.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64) || "unknown";
}

/** `cli:<os user>@<host>`: the system actor of a CLI command run without --as. */
export function cliSystemActor(): Actor {
  return { type: "system", name: `cli:${label(() => userInfo().username)}@${label(hostname)}` };
}

/** The actor of a CLI command: the enabled user `asEmail` names (exit 1 otherwise), else cliSystemActor(). */
export async function cliActor(db: Db, asEmail?: string): Promise<Actor> {
  if (asEmail === undefined) return cliSystemActor();
  const email = asEmail.trim().toLowerCase();
  const user = await db.user.findUnique({ where: { email } });
  // A value the command refuses (exit 1), as actingAs refuses it: not wrong arguments.
  if (!user) throw new AppError("not_found", `--as ${email}: no user has that email`);
  if (user.disabledAt) {
    const actor: Actor = { type: "user", id: user.id, email: user.email, role: user.role };
    const error = new AppError("forbidden", `--as ${email}: that user is disabled`, { details: { reason: "user_disabled" } });
    await recordForbidden(db, actor, error, "cli");
    throw error;
  }
  return { type: "user", id: user.id, email: user.email, role: user.role };
}

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
