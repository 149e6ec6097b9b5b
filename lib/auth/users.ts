/**
 * People: creation and password sign-in.
 *
 * Guarantees: emails are normalized (trimmed, lower-cased); passwords are stored only as argon2id
 * hashes; every sign-in attempt (success or failure) is counted with its client address and
 * audited in one transaction; an attempt the throttle delays (lib/auth/login-throttle.ts: growing
 * delays per account at an address and per address, never a lockout of the account) is refused
 * without checking the password. An unknown email costs the same argon2 verification as a known
 * one, so timing does not reveal which accounts exist. Signing out ends every session of the person
 * (`endSessions` raises User.sessionVersion, lib/auth/session.ts).
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { AppError } from "@/lib/errors";
import type { Db, Tx } from "@/lib/db";
import { lockLoginKeys, loginThrottle } from "./login-throttle";
import { hashPassword, verifyPassword, MIN_PASSWORD_LENGTH } from "./passwords";
import { requireScope, ROLES, type Actor, type Role } from "@/lib/contracts/scopes";

/** An address as RFC 5321 bounds it: at most 254 characters, the part before the @ at most 64. */
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email("must be an email address"))
  .refine((email) => email.length <= 254 && email.indexOf("@") <= 64, "must be an email address of at most 254 characters, 64 before the @");

/** Control and bidi characters, which would let a name read as another in the console and the audit log. */
const NAME_REFUSED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/;

export const newUserSchema = z
  .object({
    email: emailSchema,
    name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .refine((name) => !NAME_REFUSED.test(name), "must be plain text: no control, bidi or zero-width characters")
      .optional(),
    role: z.enum(ROLES),
    password: z.string().min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`).max(1024).optional(),
  })
  .strict();

export type NewUser = z.input<typeof newUserSchema>;

export async function createUser(tx: Tx, actor: Actor, input: NewUser): Promise<{ id: string; email: string; role: Role }> {
  requireScope(actor, "agents:manage");
  const parsed = newUserSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join(".") || null;
    throw new AppError("bad_request", `${field ?? "input"} ${issue?.message ?? "is invalid"}`, { details: { field } });
  }
  const { email, role, password } = parsed.data;
  const existing = await tx.user.findUnique({ where: { email }, select: { id: true } });
  if (existing) throw new AppError("conflict", `A user with email ${email} already exists.`);
  const user = await tx.user.create({
    data: {
      email,
      role,
      name: parsed.data.name ?? email.split("@")[0] ?? email,
      passwordHash: password ? await hashPassword(password) : null,
    },
    select: { id: true, email: true, role: true },
  });
  await recordAudit(tx, {
    actor,
    action: "user.created",
    subject: { type: "user", id: user.id },
    data: { email, role, passwordSet: Boolean(password) },
  });
  return user;
}

export type SignInResult =
  | { ok: true; user: { id: string; email: string; name: string; role: Role } }
  | { ok: false; reason: "invalid_credentials" }
  | { ok: false; reason: "rate_limited"; retryAfterSeconds: number };

/** Where an attempt came from (lib/auth/client-address.ts; null when unknown) and, for tests, when. */
export type SignInContext = { address: string | null; now?: Date };

/** A valid argon2id hash of a random string, verified against when the email is unknown. */
let dummyHash: Promise<string> | undefined;

export async function signInWithPassword(db: Db, rawEmail: unknown, rawPassword: unknown, context: SignInContext): Promise<SignInResult> {
  const email = emailSchema.safeParse(rawEmail);
  const password = z.string().min(1).max(1024).safeParse(rawPassword);
  if (!email.success || !password.success) return { ok: false, reason: "invalid_credentials" };
  const { address } = context;
  dummyHash ??= hashPassword(crypto.randomUUID());
  const dummy = await dummyHash;

  // Attempts on one account, and from one address, are taken one at a time: counting, checking and
  // recording happen under both locks, so parallel guesses cannot all slip in under the limit.
  return db.$transaction(
    async (tx) => {
      await lockLoginKeys(tx, email.data, address);
      const now = context.now ?? new Date();
      const throttle = await loginThrottle(tx, email.data, address, now);
      let result: SignInResult;
      let userId: string | null = null;
      if (throttle.throttled) {
        result = { ok: false, reason: "rate_limited", retryAfterSeconds: throttle.retryAfterSeconds };
      } else {
        const user = await tx.user.findUnique({ where: { email: email.data } });
        const valid = await verifyPassword(user?.passwordHash ?? dummy, password.data);
        userId = user?.id ?? null;
        result =
          user && valid && !user.disabledAt
            ? { ok: true, user: { id: user.id, email: user.email, name: user.name, role: user.role } }
            : { ok: false, reason: "invalid_credentials" };
        await tx.loginAttempt.create({ data: { email: email.data, address, succeeded: result.ok, at: now } });
      }
      await recordAudit(tx, {
        actor: { type: "system", name: "auth" },
        action: result.ok ? "auth.login_succeeded" : "auth.login_failed",
        subject: { type: "user", id: userId },
        data: {
          email: email.data,
          address,
          ...(result.ok ? {} : { reason: result.reason }),
          ...(throttle.throttled ? { throttledBy: throttle.by, retryAfterSeconds: throttle.retryAfterSeconds } : {}),
        },
      });
      return result;
    },
    { timeout: 15_000, maxWait: 15_000 },
  );
}

/**
 * Sign-out: ends every session of the person whose session `sessionVersion` was (next-auth's
 * signOut event), by raising User.sessionVersion, and records `auth.signed_out` by that person in
 * the same transaction. A session already ended (an older version), of a user who no longer
 * exists, or a malformed id changes and records nothing: a stale cookie cannot sign anyone out.
 */
export async function endSessions(db: Db, userId: string, sessionVersion: number): Promise<boolean> {
  if (!z.uuid().safeParse(userId).success || !Number.isInteger(sessionVersion)) return false;
  return db.$transaction(async (tx) => {
    const raised = await tx.user.updateMany({ where: { id: userId, sessionVersion }, data: { sessionVersion: { increment: 1 } } });
    if (raised.count === 0) return false;
    const user = await tx.user.findUniqueOrThrow({ where: { id: userId }, select: { id: true, email: true, role: true } });
    await recordAudit(tx, {
      actor: { type: "user", id: user.id, email: user.email, role: user.role },
      action: "auth.signed_out",
      subject: { type: "user", id: user.id },
      data: { email: user.email },
    });
    return true;
  });
}
