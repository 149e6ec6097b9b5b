import type { ReactNode } from "react";
import { redirect } from "next/navigation";
import { NAV_ITEMS } from "@/components/console/nav-items";
import { NavLink } from "@/components/console/nav-link";
import { QueryProvider } from "@/components/console/query-provider";
import { QueueBadge } from "@/components/queue/queue-badge";
import { Button } from "@/components/ui/primitives";
import { signOut } from "@/lib/auth/next-auth";
import { currentUser } from "@/lib/auth/session";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { waitingForYouCount } from "@/lib/review/queue-presenter";

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const user = await currentUser();
  if (!user) redirect("/login");
  const items = NAV_ITEMS.filter((item) => hasScope(user, item.scope));
  const waiting = hasScope(user, "runs:review") ? await waitingForYouCount(prisma(), user) : 0;
  async function signOutAction() {
    "use server";
    await signOut({ redirectTo: "/login" });
  }
  return (
    <QueryProvider>
      <div className="flex min-h-screen">
        <aside className="w-56 shrink-0 border-r border-slate-200 bg-white px-3 py-5">
          <p className="px-3 text-lg font-semibold tracking-tight text-teal-800">Airlock</p>
          <nav aria-label="Console" className="mt-6 space-y-1">
            {items.map((item) => (
              <NavLink key={item.href} href={item.href} label={item.label} badge={item.href === "/queue" ? <QueueBadge initial={waiting} /> : undefined} />
            ))}
          </nav>
          <div className="mt-8 border-t border-slate-200 px-3 pt-4 text-sm">
            <p className="truncate font-medium" data-testid="current-user">
              {user.email}
            </p>
            <p className="text-slate-500" data-testid="current-role">
              {user.role}
            </p>
            <form action={signOutAction} className="mt-3">
              <Button type="submit" variant="ghost" className="-ml-3">
                Sign out
              </Button>
            </form>
          </div>
        </aside>
        <main className="min-w-0 flex-1 px-8 py-6">{children}</main>
      </div>
    </QueryProvider>
  );
}
