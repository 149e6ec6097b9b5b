"use server";
/** The login form's server action: the only door for password sign-in from the console. */
import { actionForm } from "@/lib/auth/user-action";
import { AuthError, CredentialsSignin } from "next-auth";
import { signIn } from "@/lib/auth/next-auth";
import { safeRedirect } from "./safe-redirect";

/** `email` is what the person typed (never the password), so a failed sign-in does not clear it. */
export type LoginState = { error: string | null; email?: string };

const MAX_EMAIL = 320;

export async function loginAction(_prev: LoginState, sent: FormData): Promise<LoginState> {
  const read = actionForm(sent, ["email", "password", "from"]);
  if (!read.ok) return { error: read.error.message };
  const { form } = read;
  const email = form.get("email");
  const password = form.get("password");
  const typed = typeof email === "string" && email ? email.slice(0, MAX_EMAIL) : undefined;
  if (typeof email !== "string" || typeof password !== "string" || !email || !password) {
    return { error: "Enter your email and password.", email: typed };
  }
  try {
    await signIn("credentials", { email, password, redirectTo: safeRedirect(form.get("from")) });
  } catch (error) {
    if (error instanceof CredentialsSignin) {
      return {
        error:
          error.code === "rate_limited"
            ? "Too many failed attempts. Wait a moment and try again; each further failure makes the wait longer."
            : "Wrong email or password.",
        email: typed,
      };
    }
    if (error instanceof AuthError) {
      console.error("sign-in failed", error);
      return { error: "Sign-in failed. Try again.", email: typed };
    }
    throw error; // next's redirect after success
  }
  return { error: null, email: typed };
}

export async function oidcLoginAction(sent: FormData): Promise<void> {
  // A form the login page did not send starts no sign-in.
  const read = actionForm(sent, ["from"]);
  if (!read.ok) return;
  await signIn("oidc", { redirectTo: safeRedirect(read.form.get("from")) });
}
