/**
 * A run's whole story: its audit events, reviews and tool calls, in order. Each event says in
 * words what happened and who did it (names, with the raw actor id on hover); its raw JSON, and
 * each tool call's arguments and result, are one click away (<details>). Stored text (agent,
 * purpose, code, names, event data, arguments, comments) is shown through components/ui/inert.tsx,
 * and the code on JavaScript's numbered lines, so hidden characters appear as marker elements.
 */
import { PlainCodeView } from "@/components/run/code-view";
import { Inert } from "@/components/ui/inert";
import { Badge, Card, EmptyState, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";

export type RunTimelineView = {
  run: {
    id: string;
    agent: string;
    owner: string;
    status: string;
    errorCode: string | null;
    decision: string | null;
    purpose: string;
    codeSha256: string;
    code: string;
    createdAt: string;
    finishedAt: string | null;
  };
  events: { id: string; at: string; actor: string; actorId: string; action: string; description: string; hash: string; data: string }[];
  toolCalls: {
    seq: number;
    at: string;
    tool: string;
    outcome: string;
    durationMs: number;
    argsDigest: string;
    resultDigest: string | null;
    args: string;
    result: string;
  }[];
  reviews: { at: string; reviewer: string; verdict: string; comment: string | null }[];
};

export function RunTimeline({ timeline }: { timeline: RunTimelineView }) {
  const { run } = timeline;
  return (
    <div className="space-y-6">
      <Card title="Run">
        <dl className="grid grid-cols-1 gap-x-6 gap-y-2 text-sm md:grid-cols-2">
          <div>
            <dt className="text-slate-500">Agent</dt>
            <dd>
              <Inert text={run.agent} /> (owner {run.owner})
            </dd>
          </div>
          <div>
            <dt className="text-slate-500">Status</dt>
            <dd>
              <StatusBadge status={run.status} errorCode={run.errorCode} /> decision {run.decision ?? "—"}
            </dd>
          </div>
          <div className="md:col-span-2">
            <dt className="text-slate-500">Purpose</dt>
            <dd>
              <Inert text={run.purpose} />
            </dd>
          </div>
          <div>
            <dt className="text-slate-500">Submitted</dt>
            <dd>
              <Time iso={run.createdAt} />
            </dd>
          </div>
          <div>
            <dt className="text-slate-500">Finished</dt>
            <dd>{run.finishedAt ? <Time iso={run.finishedAt} /> : "—"}</dd>
          </div>
          <div className="md:col-span-2">
            <dt className="text-slate-500">Code sha256</dt>
            <dd className="font-mono text-xs">{run.codeSha256}</dd>
          </div>
        </dl>
        <details className="mt-3">
          <summary className="cursor-pointer text-sm text-teal-700">Code</summary>
          <div className="mt-2 max-h-96 overflow-auto">
            <PlainCodeView code={run.code} label="Code of the run" />
          </div>
        </details>
      </Card>

      <section aria-labelledby="events-heading">
        <h2 id="events-heading" className="mb-2 text-sm font-semibold text-slate-700">
          Audit events
        </h2>
        {timeline.events.length === 0 ? (
          <EmptyState title="No events for this run" />
        ) : (
          <Table caption="Audit events of the run" headers={["#", "Time", "What happened", "Who", "Raw", "Hash"]}>
            {timeline.events.map((event) => (
              <tr key={event.id} data-testid="audit-event">
                <Td>{event.id}</Td>
                <Td className="whitespace-nowrap">
                  <Time iso={event.at} />
                </Td>
                <Td>
                  <span className="block">
                    <Inert text={event.description} />
                  </span>
                  <span className="font-mono text-xs text-slate-500">{event.action}</span>
                </Td>
                <Td>
                  <span title={event.actorId}>
                    <Inert text={event.actor} />
                  </span>
                </Td>
                <Td className="max-w-md">
                  <details>
                    <summary className="cursor-pointer text-xs text-teal-700">JSON</summary>
                    <pre className="mt-1 max-h-64 overflow-auto whitespace-pre-wrap break-all font-mono text-xs">
                      <Inert text={event.data} />
                    </pre>
                  </details>
                </Td>
                <Td className="font-mono text-xs">
                  <span title={event.hash}>{event.hash.slice(0, 12)}…</span>
                </Td>
              </tr>
            ))}
          </Table>
        )}
      </section>

      {timeline.reviews.length > 0 ? (
        <section aria-labelledby="reviews-heading">
          <h2 id="reviews-heading" className="mb-2 text-sm font-semibold text-slate-700">
            Reviews
          </h2>
          <Table caption="Reviews of the run" headers={["Time", "Reviewer", "Verdict", "Comment"]}>
            {timeline.reviews.map((review) => (
              <tr key={`${review.reviewer}-${review.at}`}>
                <Td className="whitespace-nowrap">
                  <Time iso={review.at} />
                </Td>
                <Td>
                  <Inert text={review.reviewer} />
                </Td>
                <Td>{review.verdict.replaceAll("_", " ")}</Td>
                <Td>{review.comment ? <Inert text={review.comment} /> : "—"}</Td>
              </tr>
            ))}
          </Table>
        </section>
      ) : null}

      <section aria-labelledby="calls-heading">
        <h2 id="calls-heading" className="mb-2 text-sm font-semibold text-slate-700">
          Tool calls ({timeline.toolCalls.length})
        </h2>
        {timeline.toolCalls.length === 0 ? (
          <EmptyState title="No tool calls" />
        ) : (
          <Table
            caption="Tool calls of the run, in call order"
            headers={["#", "Time", "Tool", "Outcome", "ms", "Arguments and result", "Args sha256", "Result sha256"]}
          >
            {timeline.toolCalls.map((call) => (
              <tr key={call.seq}>
                <Td>{call.seq}</Td>
                <Td className="whitespace-nowrap">
                  <Time iso={call.at} />
                </Td>
                <Td className="font-mono text-xs">
                  <Inert text={call.tool} />
                </Td>
                <Td>
                  <Badge tone={call.outcome === "ok" ? "good" : "bad"}>{call.outcome}</Badge>
                </Td>
                <Td>{call.durationMs}</Td>
                <Td className="max-w-md">
                  <details>
                    <summary className="cursor-pointer text-xs text-teal-700">Show</summary>
                    <p className="mt-1 text-xs text-slate-500">Arguments</p>
                    <pre className="max-h-48 overflow-auto whitespace-pre-wrap break-all font-mono text-xs">
                      <Inert text={call.args} />
                    </pre>
                    <p className="mt-1 text-xs text-slate-500">Result</p>
                    <pre className="max-h-48 overflow-auto whitespace-pre-wrap break-all font-mono text-xs">
                      <Inert text={call.result} />
                    </pre>
                  </details>
                </Td>
                <Td className="font-mono text-xs">
                  <span title={call.argsDigest}>{call.argsDigest.slice(0, 12)}…</span>
                </Td>
                <Td className="font-mono text-xs">{call.resultDigest ? <span title={call.resultDigest}>{call.resultDigest.slice(0, 12)}…</span> : "—"}</Td>
              </tr>
            ))}
          </Table>
        )}
      </section>
    </div>
  );
}
