"use client";
/**
 * Keeps the run page current without a reload: while the run can still change (pending review:
 * other reviewers' votes; approved, queued, running: execution), the server page is re-rendered
 * every second, so a new status shows within about a second; never once the run has ended. A
 * refresh starts only after the previous one has landed; a hidden tab does not refresh and
 * catches up as soon as it is shown. Client state such as a typed comment survives a refresh.
 */
import { useRouter } from "next/navigation";
import { useEffect, useRef, useTransition } from "react";
import { IN_PROGRESS_STATUSES } from "@/lib/contracts/run-states";

const REFRESH_MS = 1_000;

export function AutoRefresh({ status }: { status: string }) {
  const router = useRouter();
  const [refreshing, startRefresh] = useTransition();
  const inFlight = useRef(false);
  useEffect(() => {
    inFlight.current = refreshing;
  }, [refreshing]);
  const live = (IN_PROGRESS_STATUSES as readonly string[]).includes(status);
  useEffect(() => {
    if (!live) return;
    const refresh = () => {
      if (!document.hidden && !inFlight.current) startRefresh(() => router.refresh());
    };
    const timer = setInterval(refresh, REFRESH_MS);
    document.addEventListener("visibilitychange", refresh);
    return () => {
      clearInterval(timer);
      document.removeEventListener("visibilitychange", refresh);
    };
  }, [live, router]);
  return null;
}
