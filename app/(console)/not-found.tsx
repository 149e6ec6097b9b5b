import Link from "next/link";

/**
 * 404 inside the console (an unknown run, an unknown address for someone signed in: app/not-found.tsx
 * renders this inside the console layout), so the navigation stays.
 */
export default function NotFound() {
  return (
    <section className="mx-auto max-w-lg px-6 py-24 text-center" data-testid="not-found">
      <p className="text-sm font-semibold text-teal-700">404</p>
      <h1 className="mt-2 text-2xl font-semibold">Page not found</h1>
      <p className="mt-2 text-slate-600">There is nothing at this address.</p>
      <Link href="/" className="mt-6 inline-block text-teal-700 underline">
        Back to the dashboard
      </Link>
    </section>
  );
}
