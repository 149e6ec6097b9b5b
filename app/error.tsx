"use client";
/**
 * The last resort for an error a page did not handle. Pages turn AppErrors into what a page can
 * say (lib/auth/user-route.ts userPage: 401/403/404 through Next's interrupts, 4xx rendered with
 * their code and message); what reaches this boundary is a server fault. In production Next hides
 * a server error's message and passes only its digest, which is shown as the reference to look
 * up in the server log (the message is never shown, so nothing a server error carries leaks).
 */
import Link from "next/link";

export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <main className="mx-auto max-w-lg px-6 py-24 text-center" role="alert">
      <p className="text-sm font-semibold text-red-700">Error</p>
      <h1 className="mt-2 text-2xl font-semibold">Something went wrong</h1>
      <p className="mt-2 text-slate-600">Airlock could not show this page. Try again; if it keeps failing, give an administrator the reference below.</p>
      {error.digest ? (
        <p className="mt-4 font-mono text-xs text-slate-500" data-testid="error-reference">
          reference {error.digest}
        </p>
      ) : null}
      <div className="mt-6 flex justify-center gap-4">
        <button type="button" onClick={reset} className="text-teal-700 underline">
          Try again
        </button>
        <Link href="/" className="text-teal-700 underline">
          Back to the dashboard
        </Link>
      </div>
    </main>
  );
}
