"use client";
/**
 * The navigation badge: runs the signed-in reviewer can still decide. Polled every 3 s, and set
 * from the server's count whenever the console re-renders (a decision, the run page's live
 * refresh), so it follows what the page shows instead of lagging a poll behind.
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";

export const QUEUE_POLL_MS = 3_000;
export const QUEUE_COUNT_KEY = ["queue-count"] as const;

export function QueueBadge({ initial }: { initial: number }) {
  const queryClient = useQueryClient();
  const { data } = useQuery({
    queryKey: QUEUE_COUNT_KEY,
    queryFn: async () => {
      const response = await fetch("/api/queue/count", { cache: "no-store" });
      if (!response.ok) throw new Error(`queue count: HTTP ${response.status}`);
      return ((await response.json()) as { waitingForYou: number }).waitingForYou;
    },
    initialData: initial,
    refetchInterval: QUEUE_POLL_MS,
  });
  useEffect(() => {
    queryClient.setQueryData(QUEUE_COUNT_KEY, initial);
  }, [initial, queryClient]);
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
