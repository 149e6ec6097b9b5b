import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { LoginForm } from "@/components/auth/login-form";
import { Button } from "@/components/ui/primitives";
import { oidcEnabled } from "@/lib/auth/next-auth";
import { currentUser } from "@/lib/auth/session";
import { loginAction, oidcLoginAction } from "./actions";
import { safeRedirect } from "./safe-redirect";

export const metadata: Metadata = { title: "Sign in" };

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ from?: string | string[] }> }) {
  if (await currentUser()) redirect("/");
  const target = safeRedirect((await searchParams).from);
  return (
    <main className="mx-auto flex min-h-screen max-w-sm flex-col justify-center px-6">
      <h1 className="text-2xl font-semibold tracking-tight">Sign in to Airlock</h1>
      <p className="mb-6 mt-1 text-sm text-slate-600">Review agent runs, search the audit log, manage policy.</p>
      <LoginForm action={loginAction} from={target} />
      {oidcEnabled() ? (
        <form action={oidcLoginAction} className="mt-4">
          <input type="hidden" name="from" value={target} />
          <Button type="submit" variant="ghost" className="w-full border border-slate-300">
            Sign in with single sign-on
          </Button>
        </form>
      ) : null}
    </main>
  );
}
