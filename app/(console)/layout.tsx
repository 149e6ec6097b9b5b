import type { ReactNode } from "react";
import { NAV_ITEMS } from "@/components/console/nav-items";
import { NavLink } from "@/components/console/nav-link";
import { NavMenu } from "@/components/console/nav-menu";
import { QueryProvider } from "@/components/console/query-provider";
import { SandboxBanner } from "@/components/console/sandbox-banner";
import { QueueBadge } from "@/components/queue/queue-badge";
import { Button } from "@/components/ui/primitives";
import { signOut } from "@/lib/auth/next-auth";
import { currentUser } from "@/lib/auth/session";
import { redirectToSignIn } from "@/lib/auth/sign-in-redirect";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { waitingForYouCount } from "@/lib/review/queue-presenter";
import { isolationNotice } from "@/lib/runs/isolation";
import { startedAppRuntime } from "@/lib/runs/runtime";

/** The banner text while runs execute below strict; none while no runtime has started (nothing runs then). */
async function sandboxNotice(): Promise<string | null> {
  const runtime = startedAppRuntime();
  if (!runtime) return null;
  try {
    return isolationNotice((await runtime).sandbox);
  } catch {
    return null; // the runtime failed to start: nothing runs
  }
}

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const user = await currentUser();
  if (!user) return redirectToSignIn();
  const items = NAV_ITEMS.filter((item) => hasScope(user, item.scope));
  const waiting = hasScope(user, "runs:review") ? await waitingForYouCount(prisma(), user) : 0;
  const notice = await sandboxNotice();
  async function signOutAction() {
    "use server";
    await signOut({ redirectTo: "/login" });
  }
  return (
    <QueryProvider>
      <div className="flex min-h-screen flex-col md:flex-row">
        <NavMenu badge={hasScope(user, "runs:review") ? <QueueBadge initial={waiting} /> : undefined}>
          <nav aria-label="Console" className="space-y-1">
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
        </NavMenu>
        <main className="min-w-0 flex-1 px-4 py-5 md:px-8 md:py-6">
          {notice ? <SandboxBanner notice={notice} /> : null}
          {children}
        </main>
      </div>
    </QueryProvider>
  );
}
