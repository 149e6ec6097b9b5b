"use client";
import { useActionState } from "react";
import { Button } from "@/components/ui/primitives";
import type { LoginState } from "@/app/(auth)/login/actions";

type Props = {
  action: (state: LoginState, form: FormData) => Promise<LoginState>;
  from: string;
};

export function LoginForm({ action, from }: Props) {
  const [state, formAction, pending] = useActionState(action, { error: null });
  return (
    <form action={formAction} className="space-y-4" noValidate>
      <input type="hidden" name="from" value={from} />
      <div>
        <label htmlFor="email" className="block text-sm font-medium text-slate-700">
          Email
        </label>
        {/* React resets the form after the action; the typed address comes back from the action's state. */}
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          defaultValue={state.email ?? ""}
          className="mt-1 w-full rounded-md border border-slate-300 px-3 py-2"
        />
      </div>
      <div>
        <label htmlFor="password" className="block text-sm font-medium text-slate-700">
          Password
        </label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          className="mt-1 w-full rounded-md border border-slate-300 px-3 py-2"
        />
      </div>
      {state.error ? (
        <p role="alert" data-testid="login-error" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800">
          {state.error}
        </p>
      ) : null}
      <Button type="submit" disabled={pending} className="w-full">
        {pending ? "Signing in…" : "Sign in"}
      </Button>
    </form>
  );
}
