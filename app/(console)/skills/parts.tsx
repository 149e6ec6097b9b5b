/**
 * Read-only pieces the skill pages share (server components): a skill's code as the run page
 * shows scripts (numbered, coloured, hidden characters marked), pretty JSON, and the wording of
 * tests, skipped runs and replay reports. Everything from agents' scripts, past runs and admins'
 * schemas is rendered through components/ui/inert.tsx; nothing here is HTML.
 */
import { CodeView } from "@/components/run/code-view";
import { Inert } from "@/components/ui/inert";
import { highlight } from "@/lib/review/highlight";
import type { SkipReason } from "@/lib/skills/service";

const SKIP_LABEL: Record<SkipReason, string> = {
  not_succeeded: "not succeeded",
  purged: "purged",
  truncated: "truncated",
  uses_inputs: "used staged inputs",
  other_literals: "other fixed values",
  call_failed: "a tool call failed",
};

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** "3 tests from past runs; skipped: 2 not succeeded". */
export function testsSummary(tests: number, skipped: unknown): string {
  const counts = skipped && typeof skipped === "object" ? Object.entries(skipped as Record<string, unknown>) : [];
  const parts = counts
    .filter((entry): entry is [string, number] => typeof entry[1] === "number" && entry[1] > 0)
    .map(([reason, count]) => `${count} ${SKIP_LABEL[reason as SkipReason] ?? reason.replaceAll("_", " ")}`);
  return `${plural(tests, "test")} from past runs${parts.length > 0 ? `; skipped: ${parts.join(", ")}` : ""}`;
}

/** "3 passed, 0 failed". */
export const reportText = (report: { passed: number; failed: number }) => `${report.passed} passed, ${report.failed} failed`;

/** A skill's code, read-only, with the test id the pages share. */
export function SkillCode({ code, label }: { code: string; label: string }) {
  return (
    <div data-testid="skill-code">
      <CodeView lines={highlight(code)} findingsByLine={{}} label={label} />
    </div>
  );
}

/** A JSON value, pretty-printed, as text; `className` sets its height (max-h-96 unless given). */
export function Json({ value, label, className, compact }: { value: unknown; label?: string; className?: string; compact?: boolean }) {
  return (
    <pre
      aria-label={label}
      tabIndex={label ? 0 : undefined}
      className={`${className ?? "max-h-96"} overflow-auto rounded-md bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-words text-slate-800`}
    >
      <Inert text={JSON.stringify(value ?? null, null, compact ? undefined : 2)} />
    </pre>
  );
}
