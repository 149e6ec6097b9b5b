"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";
import type { ReactNode } from "react";

/** A console navigation link; `badge` sits beside it (outside the link, so the link's name stays its label). */
export function NavLink({ href, label, badge }: { href: string; label: string; badge?: ReactNode }) {
  const pathname = usePathname();
  const active = href === "/" ? pathname === "/" : pathname.startsWith(href);
  return (
    <div className="relative">
      <Link
        href={href}
        aria-current={active ? "page" : undefined}
        className={`block rounded-md px-3 py-2 text-sm font-medium ${active ? "bg-teal-50 text-teal-800" : "text-slate-700 hover:bg-slate-100"}`}
      >
        {label}
      </Link>
      {badge ? <div className="pointer-events-none absolute inset-y-0 right-2 flex items-center">{badge}</div> : null}
    </div>
  );
}
