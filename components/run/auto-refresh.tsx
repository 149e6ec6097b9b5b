"use client";
/** Re-renders the server page every few seconds while a run can still change (pending, queued, running). Client state such as a typed comment survives a refresh. */
import { useRouter } from "next/navigation";
import { useEffect } from "react";

export function AutoRefresh({ active, everyMs = 2_000 }: { active: boolean; everyMs?: number }) {
  const router = useRouter();
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => router.refresh(), everyMs);
    return () => clearInterval(timer);
  }, [active, everyMs, router]);
  return null;
}
