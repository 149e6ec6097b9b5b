"use server";
/** The login form's server action: the only door for password sign-in from the console. */
import { actionForm } from "@/lib/auth/user-action";
import { AuthError, CredentialsSignin } from "next-auth";
import { signIn } from "@/lib/auth/next-auth";
import { safeRedirect } from "./safe-redirect";

export type LoginState = { error: string | null };

export async function loginAction(_prev: LoginState, sent: FormData): Promise<LoginState> {
  const form = actionForm(sent);
  const email = form.get("email");
  const password = form.get("password");
  if (typeof email !== "string" || typeof password !== "string" || !email || !password) {
    return { error: "Enter your email and password." };
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
      };
    }
    if (error instanceof AuthError) {
      console.error("sign-in failed", error);
      return { error: "Sign-in failed. Try again." };
    }
    throw error; // next's redirect after success
  }
  return { error: null };
}

export async function oidcLoginAction(sent: FormData): Promise<void> {
  const form = actionForm(sent);
  await signIn("oidc", { redirectTo: safeRedirect(form.get("from")) });
}
