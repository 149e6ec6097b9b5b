import Link from "next/link";

export default function NotFound() {
  return (
    <main className="mx-auto max-w-lg px-6 py-24 text-center">
      <p className="text-sm font-semibold text-teal-700">404</p>
      <h1 className="mt-2 text-2xl font-semibold">Page not found</h1>
      <p className="mt-2 text-slate-600">There is nothing at this address.</p>
      <Link href="/" className="mt-6 inline-block text-teal-700 underline">
        Back to the dashboard
      </Link>
    </main>
  );
}
