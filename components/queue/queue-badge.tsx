"use client";
/** The navigation badge: runs the signed-in reviewer can still decide, refreshed every 3 s. */
import { useQuery } from "@tanstack/react-query";

export const QUEUE_POLL_MS = 3_000;

export function QueueBadge({ initial }: { initial: number }) {
  const { data } = useQuery({
    queryKey: ["queue-count"],
    queryFn: async () => {
      const response = await fetch("/api/queue/count", { cache: "no-store" });
      if (!response.ok) throw new Error(`queue count: HTTP ${response.status}`);
      return ((await response.json()) as { waitingForYou: number }).waitingForYou;
    },
    initialData: initial,
    refetchInterval: QUEUE_POLL_MS,
  });
  if (!data) return null;
  return (
    <span
      data-testid="queue-badge"
      className="inline-flex min-w-5 items-center justify-center rounded-full bg-amber-500 px-1.5 text-xs font-semibold text-white"
    >
      {data}
      <span className="sr-only"> {data === 1 ? "run waits" : "runs wait"} for you</span>
    </span>
  );
}
