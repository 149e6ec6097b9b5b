"use client";
/**
 * The console's side bar. From the md breakpoint up it is always shown; below it (a phone) it
 * collapses under a top bar whose Menu button opens it, and it closes again on navigation.
 * `badge` (the queue count) stays on the top bar while the menu is closed.
 */
import { usePathname } from "next/navigation";
import { useState, type ReactNode } from "react";

export function NavMenu({ children, badge }: { children: ReactNode; badge?: ReactNode }) {
  const pathname = usePathname();
  // The page the menu was opened on: navigating anywhere else closes it.
  const [openOn, setOpenOn] = useState<string | null>(null);
  const open = openOn === pathname;
  return (
    <aside className="shrink-0 border-b border-slate-200 bg-white md:w-56 md:border-r md:border-b-0 md:px-3 md:py-5">
      <div className="flex items-center justify-between gap-3 px-4 py-3 md:p-0 md:px-3">
        <p className="text-lg font-semibold tracking-tight text-teal-800">Airlock</p>
        <div className="flex items-center gap-2 md:hidden">
          {/* Hidden rather than unmounted, so reopening the menu does not reset the count to the page's first one. */}
          <span className={open ? "hidden" : "contents"}>{badge}</span>
          <button
            type="button"
            aria-expanded={open}
            aria-controls="console-menu"
            onClick={() => setOpenOn(open ? null : pathname)}
            className="inline-flex items-center gap-2 rounded-md border border-slate-300 px-3 py-1.5 text-sm font-medium text-slate-700 hover:bg-slate-100"
          >
            <svg aria-hidden="true" viewBox="0 0 20 20" className="size-4" fill="none" stroke="currentColor" strokeWidth="2">
              {open ? <path d="M5 5l10 10M15 5L5 15" /> : <path d="M3 5h14M3 10h14M3 15h14" />}
            </svg>
            Menu
          </button>
        </div>
      </div>
      {/* A click on a link closes the menu, also when it leads to the page already shown. */}
      <div
        id="console-menu"
        onClick={(event) => (event.target instanceof Element && event.target.closest("a") ? setOpenOn(null) : undefined)}
        className={`${open ? "block" : "hidden"} px-3 pb-4 md:mt-6 md:block md:px-0 md:pb-0`}
      >
        {children}
      </div>
    </aside>
  );
}
