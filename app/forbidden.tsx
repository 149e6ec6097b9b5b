import Link from "next/link";

export default function Forbidden() {
  return (
    <main className="mx-auto max-w-lg px-6 py-24 text-center">
      <p className="text-sm font-semibold text-red-700">403</p>
      <h1 className="mt-2 text-2xl font-semibold">Not allowed</h1>
      <p className="mt-2 text-slate-600">Your role does not give access to this page.</p>
      <Link href="/" className="mt-6 inline-block text-teal-700 underline">
        Back to the dashboard
      </Link>
    </main>
  );
}
