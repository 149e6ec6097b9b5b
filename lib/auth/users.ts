/**
 * People: creation and password sign-in.
 *
 * Guarantees: emails are normalized (trimmed, lower-cased); passwords are stored only as argon2id
 * hashes; every sign-in attempt (success or failure) is counted and audited in one transaction;
 * after AIRLOCK_LOGIN_MAX_FAILURES failures for an email within AIRLOCK_LOGIN_WINDOW_MINUTES, further
 * attempts are refused without checking the password. An unknown email costs the same argon2
 * verification as a known one, so timing does not reveal which accounts exist.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { env } from "@/lib/env";
import { AppError } from "@/lib/errors";
import type { Db, Tx } from "@/lib/db";
import { hashPassword, verifyPassword, MIN_PASSWORD_LENGTH } from "./passwords";
import { requireScope, ROLES, type Actor, type Role } from "@/lib/contracts/scopes";

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email("must be an email address"));

export const newUserSchema = z
  .object({
    email: emailSchema,
    name: z.string().trim().min(1).max(200).optional(),
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
    throw new AppError("bad_request", `${issue?.path.join(".") || "input"} ${issue?.message ?? "is invalid"}`);
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
  { ok: true; user: { id: string; email: string; name: string; role: Role } } | { ok: false; reason: "invalid_credentials" | "rate_limited" };

/** A valid argon2id hash of a random string, verified against when the email is unknown. */
let dummyHash: Promise<string> | undefined;

export async function signInWithPassword(db: Db, rawEmail: unknown, rawPassword: unknown): Promise<SignInResult> {
  const email = emailSchema.safeParse(rawEmail);
  const password = z.string().min(1).max(1024).safeParse(rawPassword);
  if (!email.success || !password.success) return { ok: false, reason: "invalid_credentials" };

  const { AIRLOCK_LOGIN_MAX_FAILURES, AIRLOCK_LOGIN_WINDOW_MINUTES } = env();
  const since = new Date(Date.now() - AIRLOCK_LOGIN_WINDOW_MINUTES * 60_000);
  dummyHash ??= hashPassword(crypto.randomUUID());
  const dummy = await dummyHash;

  // One attempt per email at a time: counting, checking and recording happen under a lock, so
  // parallel guesses cannot all slip in under the limit.
  return db.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`login:${email.data}`}))`;
      const recentFailures = await tx.loginAttempt.count({
        where: { email: email.data, succeeded: false, at: { gte: since } },
      });
      let result: SignInResult;
      let userId: string | null = null;
      if (recentFailures >= AIRLOCK_LOGIN_MAX_FAILURES) {
        result = { ok: false, reason: "rate_limited" };
      } else {
        const user = await tx.user.findUnique({ where: { email: email.data } });
        const valid = await verifyPassword(user?.passwordHash ?? dummy, password.data);
        userId = user?.id ?? null;
        result =
          user && valid && !user.disabledAt
            ? { ok: true, user: { id: user.id, email: user.email, name: user.name, role: user.role } }
            : { ok: false, reason: "invalid_credentials" };
        await tx.loginAttempt.create({ data: { email: email.data, succeeded: result.ok } });
      }
      await recordAudit(tx, {
        actor: { type: "system", name: "auth" },
        action: result.ok ? "auth.login_succeeded" : "auth.login_failed",
        subject: { type: "user", id: userId },
        data: { email: email.data, ...(result.ok ? {} : { reason: result.reason }) },
      });
      return result;
    },
    { timeout: 15_000, maxWait: 15_000 },
  );
}

/**
 * `auth.signed_out` for the person whose session just ended (next-auth's signOut event). The actor
 * is that person; a session of a user who no longer exists records nothing.
 */
export async function recordSignedOut(db: Db, userId: string): Promise<boolean> {
  if (!z.uuid().safeParse(userId).success) return false;
  const user = await db.user.findUnique({ where: { id: userId }, select: { id: true, email: true, role: true } });
  if (!user) return false;
  await db.$transaction((tx) =>
    recordAudit(tx, {
      actor: { type: "user", id: user.id, email: user.email, role: user.role },
      action: "auth.signed_out",
      subject: { type: "user", id: user.id },
      data: { email: user.email },
    }),
  );
  return true;
}
