/**
 * Read-only sections of the run page. Everything rendered here is inert text from the presenter,
 * shown through components/ui/inert.tsx (React text nodes, and marker elements for hidden
 * characters; no HTML from scripts, tools or agents).
 */
import Link from "next/link";
import type { ReactNode } from "react";
import { Inert, InertOr } from "@/components/ui/inert";
import { Badge, Card, Table, Td } from "@/components/ui/primitives";
import { StatusBadge } from "@/components/ui/status-badge";
import { Time } from "@/components/ui/time";
import type { RunDetail } from "@/lib/review/dto";
import { touchesRegulatedData } from "@/lib/contracts/data-classes";

export function Section({ title, id, children, className }: { title: string; id: string; children: ReactNode; className?: string }) {
  return (
    <section aria-labelledby={id} className={`rounded-lg border border-slate-200 bg-white p-5 shadow-sm ${className ?? ""}`}>
      <h2 id={id} className="mb-3 text-base font-semibold text-slate-800">
        {title}
      </h2>
      {children}
    </section>
  );
}

function Pre({ children, label }: { children: ReactNode; label: string }) {
  return (
    <pre
      aria-label={label}
      tabIndex={0}
      className="max-h-96 overflow-auto rounded-md bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-words text-slate-800"
    >
      {children}
    </pre>
  );
}

function hint(value: boolean | null, yes: string): ReactNode {
  if (value === null) return null;
  return value ? <Badge tone={yes === "read-only" ? "good" : "warn"}>{yes}</Badge> : null;
}

export function Capabilities({ run }: { run: RunDetail }) {
  if (run.capabilities.length === 0) return <p className="text-sm text-slate-600">The script calls no tools.</p>;
  return (
    <Table caption="Tools this script may call" headers={["Tool", "Annotations", "Data class", "Description"]}>
      {run.capabilities.map((tool) => (
        <tr key={tool.name} data-testid={`capability-${tool.name}`}>
          <Td className="font-mono text-xs">
            <Inert text={tool.name} />
          </Td>
          <Td>
            <div className="flex flex-wrap gap-1">
              {!tool.known ? <Badge tone="bad">unknown tool (treated as destructive)</Badge> : null}
              {tool.quarantined ? <Badge tone="bad">quarantined</Badge> : null}
              {hint(tool.annotations.readOnly, "read-only")}
              {hint(tool.annotations.destructive, "destructive")}
              {hint(tool.annotations.openWorld, "open world")}
              {tool.annotations.idempotent === true ? <Badge>idempotent</Badge> : null}
              {tool.annotations.readOnly === false && tool.annotations.destructive === false ? <Badge tone="warn">writes</Badge> : null}
            </div>
          </Td>
          <Td>{tool.dataClass ? <Badge tone={touchesRegulatedData([tool.dataClass]) ? "warn" : "neutral"}>{tool.dataClass}</Badge> : "—"}</Td>
          <Td className="text-xs text-slate-600">
            <InertOr text={tool.description} fallback="—" />
          </Td>
        </tr>
      ))}
    </Table>
  );
}

/** What the sandbox will enforce: exactly these numbers are passed to it. */
export function Limits({ run }: { run: RunDetail }) {
  const { limits } = run;
  if (!limits) return <p className="text-sm text-slate-600">This run was stored before limits were recorded; the sandbox defaults apply.</p>;
  const caps = Object.entries(limits.writeCaps).sort(([a], [b]) => a.localeCompare(b));
  return (
    <div data-testid="limits" className="space-y-2 text-sm">
      <dl className="grid grid-cols-2 gap-x-6 gap-y-1 sm:grid-cols-4">
        {[
          ["Wall clock", `${limits.timeoutMs / 1000} s`],
          ["CPU", `${limits.cpuSeconds} s`],
          ["Heap", `${limits.heapMb} MB`],
          ["Tool calls in all", String(limits.maxToolCalls)],
        ].map(([label, value]) => (
          <div key={label}>
            <dt className="text-slate-500">{label}</dt>
            <dd className="font-medium">{value}</dd>
          </div>
        ))}
      </dl>
      {caps.length === 0 ? (
        <p className="text-slate-600">Every tool this script calls is read-only; only the total applies.</p>
      ) : (
        <ul className="list-disc pl-5">
          {caps.map(([tool, cap]) => (
            <li key={tool} data-testid={`cap-${tool}`}>
              <span className="font-mono text-xs">
                <Inert text={tool} />
              </span>{" "}
              may be called at most <strong>{cap}</strong> {cap === 1 ? "time" : "times"}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Inputs({ run }: { run: RunDetail }) {
  if (run.inputs.length === 0) return <p className="text-sm text-slate-600">No datasets are passed to this run.</p>;
  return (
    <ul className="space-y-4">
      {run.inputs.map((input) => (
        <li key={input.name} data-testid={`input-${input.name}`}>
          <p className="flex flex-wrap items-center gap-2 text-sm">
            <span className="font-mono">
              <Inert text={input.name} />
            </span>
            <Badge tone={touchesRegulatedData([input.dataClass]) ? "warn" : "neutral"}>{input.dataClass}</Badge>
            <span className="text-slate-600">{input.sizeBytes === null ? "missing" : `${input.sizeBytes.toLocaleString("en")} bytes`}</span>
            {input.mediaType ? <span className="text-slate-500">{input.mediaType}</span> : null}
            {input.changed ? <Badge tone="bad">content changed since submission — the run will refuse it</Badge> : null}
          </p>
          {input.preview !== null ? (
            <Pre label={`Preview of ${input.name}`}>
              <Inert text={input.preview} />
              {input.previewTruncated ? "\n… (preview shows the first 20 lines)" : ""}
            </Pre>
          ) : (
            <p className="text-xs text-slate-500">No text preview for this media type.</p>
          )}
        </li>
      ))}
    </ul>
  );
}

export function PolicyDecision({ run }: { run: RunDetail }) {
  return (
    <div className="space-y-3">
      <p className="text-sm">
        Decision <Badge tone={run.decision === "deny" ? "bad" : run.decision === "escalate" ? "warn" : "good"}>{run.decision ?? "none"}</Badge>
        {run.policyVersion !== null ? <span className="text-slate-600"> under policy version {run.policyVersion}</span> : null}
        {run.decision === "escalate" ? (
          <span className="text-slate-600">
            {" "}
            — {run.approvalsRequired} approval{run.approvalsRequired === 1 ? "" : "s"} from the {run.reviewerRole ?? "reviewer"} role
          </span>
        ) : null}
      </p>
      <ul className="space-y-2">
        {run.reasons.map((reason) => (
          <li key={reason.policyId} className="rounded-md border border-slate-200 p-3" data-testid={`reason-${reason.policyId}`}>
            <p className="font-mono text-xs text-slate-500">
              <Inert text={reason.policyId} />
            </p>
            <p className="text-sm">
              <Inert text={reason.text} />
            </p>
            {reason.source ? (
              <details className="mt-1">
                <summary className="cursor-pointer text-xs text-teal-800">Policy text</summary>
                <Pre label={`Cedar text of ${reason.policyId}`}>
                  <Inert text={reason.source} />
                </Pre>
              </details>
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function Provenance({ run }: { run: RunDetail }) {
  const p = run.provenance;
  return (
    <dl className="grid grid-cols-[auto_minmax(0,1fr)] gap-x-4 gap-y-1 text-sm">
      <dt className="text-slate-500">Model</dt>
      <dd>
        <InertOr text={p.model} fallback="not stated" />
      </dd>
      <dt className="text-slate-500">Conversation</dt>
      <dd className="font-mono text-xs">
        <InertOr text={p.conversationId} fallback="not stated" />
      </dd>
      <dt className="text-slate-500">Prompt</dt>
      <dd>
        {p.prompt ? (
          <Pre label="Prompt excerpt">
            <Inert text={p.prompt} />
            {p.promptLength > p.prompt.length ? `\n… (${p.promptLength} characters in all)` : ""}
          </Pre>
        ) : (
          "not stated"
        )}
      </dd>
      <dt className="text-slate-500">Context</dt>
      <dd>
        {p.context ? (
          <Pre label="Selected context excerpt">
            <Inert text={p.context} />
            {p.contextLength > p.context.length ? `\n… (${p.contextLength} characters in all)` : ""}
          </Pre>
        ) : (
          "not stated"
        )}
      </dd>
    </dl>
  );
}

/** What the agent said it did with the result (record_outcome), as it said it. */
export function AgentOutcomes({ run }: { run: RunDetail }) {
  if (run.agentOutcomes.length === 0) return <p className="text-sm text-slate-600">The agent has not said what it did with the result.</p>;
  return (
    <Table caption="What the agent did with the result, as the agent recorded it" headers={["Recorded", "Action", "Detail (from the agent, untrusted)"]}>
      {run.agentOutcomes.map((outcome) => (
        <tr key={outcome.id} data-testid="agent-outcome">
          <Td>
            <Time iso={outcome.at} />
          </Td>
          <Td>{outcome.action}</Td>
          <Td>
            <InertOr text={outcome.detail} fallback="—" />
          </Td>
        </tr>
      ))}
    </Table>
  );
}

export function SameCode({ run }: { run: RunDetail }) {
  if (run.sameCode.length === 0) return <p className="text-sm text-slate-600">No earlier run had exactly this code.</p>;
  return (
    <Table caption="Earlier runs with the same code hash" headers={["Submitted", "Agent", "Status", "Reviews"]}>
      {run.sameCode.map((other) => (
        <tr key={other.id}>
          <Td>
            <Link href={`/runs/${other.id}`} className="text-teal-800 underline">
              <Time iso={other.createdAt} />
            </Link>
          </Td>
          <Td>
            <Inert text={other.agent} />
          </Td>
          <Td>
            <StatusBadge status={other.status} /> {other.decision ? <span className="text-xs text-slate-500">policy: {other.decision}</span> : null}
          </Td>
          <Td className="text-xs">{other.reviewers.length ? other.reviewers.join("; ") : "—"}</Td>
        </tr>
      ))}
    </Table>
  );
}

export function Outcome({ run }: { run: RunDetail }) {
  const outcome = run.outcome;
  if (!outcome) return null;
  const stats = outcome.stats;
  return (
    <div className="space-y-4">
      <dl className="grid grid-cols-2 gap-3 text-sm sm:grid-cols-5">
        {[
          ["Isolation", outcome.isolation ?? "unknown"],
          ["Wall time", stats.wallMs === null ? "—" : `${stats.wallMs} ms`],
          ["CPU", stats.cpuMs === null ? "—" : `${stats.cpuMs} ms`],
          ["Peak memory", stats.peakRssMb === null ? "—" : `${stats.peakRssMb} MB`],
          ["Tool calls", stats.toolCalls === null ? "—" : String(stats.toolCalls)],
        ].map(([label, value]) => (
          <div key={label} className="rounded-md bg-slate-50 p-2">
            <dt className="text-xs text-slate-500">{label}</dt>
            <dd className="font-medium" data-testid={label === "Isolation" ? "isolation" : undefined}>
              {value}
            </dd>
          </div>
        ))}
      </dl>
      {outcome.error ? (
        <div role="note" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm" data-testid="run-error">
          <p className="font-mono text-xs text-red-800">{outcome.error.code}</p>
          <p className="whitespace-pre-wrap text-red-900">
            <Inert text={outcome.error.message} />
          </p>
          {outcome.error.untrusted ? <p className="mt-1 text-xs text-red-700">This text came from the script or a tool; it is untrusted.</p> : null}
          {outcome.error.detail ? (
            <details className="mt-2">
              <summary className="cursor-pointer text-xs text-red-800">Stack</summary>
              <Pre label="Stack">
                <Inert text={outcome.error.detail} />
              </Pre>
            </details>
          ) : null}
        </div>
      ) : null}
      {outcome.gate ? <GateReport gate={outcome.gate} /> : null}
      {outcome.flags.length > 0 ? (
        <p className="flex flex-wrap gap-1 text-sm">
          Flags:{" "}
          {outcome.flags.map((flag) => (
            <Badge key={flag} tone="warn">
              <Inert text={flag} />
            </Badge>
          ))}
        </p>
      ) : null}
      <div>
        <h3 className="mb-1 text-sm font-semibold text-slate-700">Result{outcome.truncated ? " (truncated for the agent; complete here)" : ""}</h3>
        {outcome.result === null ? (
          <p className="text-sm text-slate-600">No result.</p>
        ) : (
          <Pre label="Result">
            <Inert text={outcome.result} />
          </Pre>
        )}
      </div>
      <div>
        <h3 className="mb-1 text-sm font-semibold text-slate-700">Logs</h3>
        {outcome.logs.length === 0 ? (
          <p className="text-sm text-slate-600">Nothing was logged.</p>
        ) : (
          <Pre label="Logs">
            {outcome.logs.map((line, i) => (
              <span key={i} className={line.level === "error" ? "text-red-700" : line.level === "warn" ? "text-amber-700" : undefined}>
                [{line.level}] <Inert text={line.text} />
                {"\n"}
              </span>
            ))}
          </Pre>
        )}
      </div>
    </div>
  );
}

type Gate = NonNullable<NonNullable<RunDetail["outcome"]>["gate"]>;

/** The checks the script declared as the host decided them, its assumptions and the rows behind the result. */
function GateReport({ gate }: { gate: Gate }) {
  return (
    <div className="space-y-3" data-testid="gate-report">
      <div>
        <h3 className="mb-1 text-sm font-semibold text-slate-700">Checks (decided by Airlock, not by the script)</h3>
        {gate.checks.length === 0 ? (
          <p className="text-sm text-slate-600">The script declared no checks on its result.</p>
        ) : (
          <Table caption="Result checks" headers={["Check", "Kind", "Verdict", "What Airlock found"]}>
            {gate.checks.map((check, i) => (
              <tr key={i} data-testid="check">
                <Td>
                  <Inert text={check.label} />
                </Td>
                <Td className="font-mono text-xs">{check.kind}</Td>
                <Td>
                  <Badge tone={check.ok ? "good" : "bad"}>{check.ok ? "passed" : "failed"}</Badge>
                </Td>
                <Td>
                  <Inert text={check.message} />
                </Td>
              </tr>
            ))}
          </Table>
        )}
      </div>
      {gate.assumptions.length > 0 ? (
        <div>
          <h3 className="mb-1 text-sm font-semibold text-slate-700">Assumptions the script declared</h3>
          <ul className="list-disc pl-5 text-sm" data-testid="assumptions">
            {gate.assumptions.map((text, i) => (
              <li key={i}>
                <Inert text={text} />
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {gate.partial !== null ? (
        <p className="rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900">
          The script declared its result partial: <Inert text={gate.partial} />
        </p>
      ) : null}
      <p className="text-sm text-slate-700" data-testid="lineage">
        Rows read:{" "}
        {gate.rows.read.length === 0
          ? "none"
          : gate.rows.read.map((r, i) => (
              <span key={i}>
                {i > 0 ? ", " : ""}
                <Inert text={r.tool} /> {r.rows}
              </span>
            ))}
        {" · "}rows returned: {gate.rows.returned ?? "—"}
        {" · "}covered by rowCount and sum checks: {gate.rows.covered ?? "none"}
      </p>
    </div>
  );
}

export function ToolCalls({ run }: { run: RunDetail }) {
  if (run.toolCalls.length === 0) return <p className="text-sm text-slate-600">No tool calls were made.</p>;
  return (
    <ol className="space-y-2">
      {run.toolCalls.map((call) => (
        <li key={call.seq}>
          <details className="rounded-md border border-slate-200" data-testid={`tool-call-${call.seq}`}>
            <summary className="cursor-pointer px-3 py-2 text-sm">
              <span className="font-mono">
                #{call.seq} <Inert text={call.name} />
              </span>{" "}
              <Badge tone={call.outcome === "ok" ? "good" : "bad"}>{call.outcome}</Badge> <span className="text-slate-500">{call.durationMs} ms</span>
            </summary>
            <div className="space-y-2 px-3 pb-3">
              <h3 className="text-xs font-semibold text-slate-600">Arguments</h3>
              <Pre label={`Arguments of call ${call.seq}`}>
                <Inert text={call.args} />
              </Pre>
              <h3 className="text-xs font-semibold text-slate-600">Result</h3>
              <Pre label={`Result of call ${call.seq}`}>
                <Inert text={call.result} />
              </Pre>
              {call.error ? (
                <p className="text-sm text-red-800">
                  Error: <Inert text={call.error} />
                </p>
              ) : null}
            </div>
          </details>
        </li>
      ))}
    </ol>
  );
}

export function Timeline({ run }: { run: RunDetail }) {
  return (
    <ol className="relative space-y-3 border-l border-slate-200 pl-4" data-testid="timeline">
      {run.timeline.map((event) => (
        <li key={event.id} data-action={event.action}>
          <p className="text-sm">
            <span className="font-mono text-xs font-semibold">{event.action}</span>{" "}
            <span className="text-slate-600">
              by <Inert text={event.actor} />
            </span>
          </p>
          <p className="text-xs text-slate-500">
            <Time iso={event.at} /> · event #{event.id}
          </p>
          {event.data !== "{}" ? (
            <details>
              <summary className="cursor-pointer text-xs text-teal-800">Details</summary>
              <Pre label={`Data of event ${event.id}`}>
                <Inert text={event.data} />
              </Pre>
            </details>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

export function Reviews({ run }: { run: RunDetail }) {
  const approvals = run.reviews.filter((r) => r.verdict === "approve");
  return (
    <div className="space-y-2 text-sm">
      {run.decision === "escalate" ? (
        <p data-testid="quorum">
          <strong>
            {approvals.length} of {Math.max(1, run.approvalsRequired)}
          </strong>{" "}
          approvals{approvals.length > 0 ? `: ${approvals.map((r) => `${r.reviewer} (${r.email})`).join(", ")}` : ""}
        </p>
      ) : null}
      {run.reviews.length > 0 ? (
        <ul className="space-y-1">
          {run.reviews.map((review) => (
            <li key={review.email} className="rounded-md bg-slate-50 px-3 py-2">
              <span className="font-medium">
                <Inert text={review.reviewer} />
              </span>{" "}
              <Badge tone={review.verdict === "approve" ? "good" : "bad"}>{review.verdict.replaceAll("_", " ")}</Badge>{" "}
              <span className="text-xs text-slate-500">
                <Time iso={review.at} />
              </span>
              {review.comment ? (
                <p className="mt-1 whitespace-pre-wrap">
                  <Inert text={review.comment} />
                </p>
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <p className="text-slate-600">No reviews yet.</p>
      )}
    </div>
  );
}

export { Card };
