"use client";
/**
 * The live review queue: rendered on the server first, then refreshed every 3 s from
 * GET /api/queue with the same filters (which live in the URL, so a filtered view can be shared
 * and survives reloads). Everything shown is inert text from the presenter, rendered through
 * components/ui/inert.tsx (hidden characters as marker elements).
 */
import Form from "next/form";
import Link from "next/link";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { Inert } from "@/components/ui/inert";
import { Badge, EmptyState, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import type { QueueItem, QueueView } from "@/lib/review/dto";
import { QUEUE_POLL_MS } from "./queue-badge";

function age(fromIso: string, nowIso: string): string {
  const seconds = Math.max(0, Math.round((Date.parse(nowIso) - Date.parse(fromIso)) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86_400)} d`;
}

const RISK_TONE = { blocked: "bad", high: "bad", medium: "warn", low: "neutral" } as const satisfies Record<QueueItem["risk"]["level"], string>;
const BLOCKED = {
  not_reviewer: "not a reviewer",
  own_agent: "your agent",
  own_submission: "you submitted it",
  reviewer_role: "other role",
  not_pending: "decided",
  expired: "expired",
  already_voted: "you voted",
} as const satisfies Record<NonNullable<QueueItem["blockedBecause"]>, string>;

function queueKey(filters: QueueView["filters"]) {
  return ["queue", filters.agent ?? "", filters.effect ?? ""];
}

function queueUrl(filters: QueueView["filters"]): string {
  const params = new URLSearchParams();
  if (filters.agent) params.set("agent", filters.agent);
  if (filters.effect) params.set("effect", filters.effect);
  const query = params.toString();
  return query ? `/api/queue?${query}` : "/api/queue";
}

function Row({ item, now }: { item: QueueItem; now: string }) {
  return (
    <tr data-testid={`queue-row-${item.id}`}>
      <Td>
        <span title={item.createdAt}>{age(item.createdAt, now)}</span>
      </Td>
      <Td>
        <Inert text={item.agent} />
      </Td>
      <Td>
        <Link href={`/runs/${item.id}`} className="font-medium text-teal-800 underline-offset-2 hover:underline">
          <Inert text={item.purpose} />
        </Link>
      </Td>
      <Td>
        <div className="flex flex-wrap items-center gap-1">
          <Badge tone={RISK_TONE[item.risk.level]} data-testid="risk" data-risk={item.risk.level}>
            {item.risk.label}
          </Badge>
          <Badge tone={item.effect === "read_only" ? "neutral" : "warn"}>{item.effect.replace("_", " ")}</Badge>
          {item.openWorld ? <Badge tone="warn">open world</Badge> : null}
          {item.dataClasses.map((c) => (
            <Badge key={c}>{c}</Badge>
          ))}
          {item.findings.critical + item.findings.warning > 0 ? (
            <Badge tone={item.findings.critical ? "bad" : "warn"}>
              {item.findings.critical + item.findings.warning} finding{item.findings.critical + item.findings.warning === 1 ? "" : "s"}
            </Badge>
          ) : null}
        </div>
      </Td>
      <Td>
        {/* The queue lists runs waiting for people only (queueView). */}
        <StatusBadge status={item.status} />{" "}
        <span data-testid="approvals" className="whitespace-nowrap">
          {item.approvals.length}/{item.approvalsRequired} {item.waitingFor === "release" ? "releases" : "approvals"}
        </span>
        {item.approvals.length > 0 ? <span className="block text-xs text-slate-500">{item.approvals.join(", ")}</span> : null}
      </Td>
      <Td>
        {item.blockedBecause ? <span className="text-xs text-slate-500">{BLOCKED[item.blockedBecause]}</span> : <Badge tone="good">yours to decide</Badge>}
      </Td>
    </tr>
  );
}

export function QueueTable({ initial }: { initial: QueueView }) {
  const queryClient = useQueryClient();
  // Coming back to the queue, the server's fresh render replaces an older cached view at once.
  useEffect(() => {
    const cached = queryClient.getQueryData<QueueView>(queueKey(initial.filters));
    if (!cached || cached.generatedAt < initial.generatedAt) queryClient.setQueryData(queueKey(initial.filters), initial);
  }, [initial, queryClient]);
  const { data, isError } = useQuery({
    queryKey: queueKey(initial.filters),
    queryFn: async (): Promise<QueueView> => {
      const response = await fetch(queueUrl(initial.filters), { cache: "no-store" });
      if (!response.ok) throw new Error(`queue: HTTP ${response.status}`);
      return (await response.json()) as QueueView;
    },
    initialData: initial,
    refetchInterval: QUEUE_POLL_MS,
  });
  const view = data ?? initial;
  const filtered = Boolean(view.filters.agent || view.filters.effect);
  return (
    <div className="space-y-4">
      <Form action="/queue" className="flex flex-wrap items-end gap-3" aria-label="Filter the queue">
        <div>
          <label htmlFor="queue-agent" className="block text-xs font-medium text-slate-600">
            Agent
          </label>
          <select
            id="queue-agent"
            name="agent"
            defaultValue={view.filters.agent ?? ""}
            onChange={(event) => event.currentTarget.form?.requestSubmit()}
            className="mt-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm"
          >
            <option value="">All agents</option>
            {[...new Set([...view.agents, ...(view.filters.agent ? [view.filters.agent] : [])])].map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="queue-effect" className="block text-xs font-medium text-slate-600">
            Effect
          </label>
          <select
            id="queue-effect"
            name="effect"
            defaultValue={view.filters.effect ?? ""}
            onChange={(event) => event.currentTarget.form?.requestSubmit()}
            className="mt-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm"
          >
            <option value="">Any effect</option>
            <option value="destructive">destructive</option>
            <option value="write">write</option>
            <option value="read_only">read only</option>
          </select>
        </div>
        <noscript>
          <button type="submit" className="rounded-md border border-slate-300 px-3 py-1.5 text-sm">
            Filter
          </button>
        </noscript>
        {filtered ? (
          <Link href="/queue" className="py-1.5 text-sm text-teal-800 underline">
            Clear filters
          </Link>
        ) : null}
        <p className="ml-auto text-xs text-slate-500" aria-live="polite" data-testid="queue-summary">
          {view.items.length} shown of {view.total} pending · {view.waitingForYou} waiting for you{isError ? " · live updates paused (retrying)" : ""}
        </p>
      </Form>
      {view.items.length === 0 ? (
        <EmptyState title={filtered ? "No pending run matches these filters" : "Nothing to review"}>
          {filtered ? "Clear the filters to see the whole queue." : "Escalated runs appear here as agents submit them; this list updates by itself."}
        </EmptyState>
      ) : (
        <Table caption="Runs waiting for review, riskiest first, then oldest" headers={["Waiting", "Agent", "Purpose", "Risk", "Status", "You"]}>
          {view.items.map((item) => (
            <Row key={item.id} item={item} now={view.generatedAt} />
          ))}
        </Table>
      )}
    </div>
  );
}
