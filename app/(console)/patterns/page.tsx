/**
 * Patterns: the scripts agents keep running with other values (lib/review/patterns.ts), most
 * review time first — the candidates for a reviewed skill. Admins and reviewers (patterns:read);
 * admins (skills:manage) get a link to draft a skill from each pattern.
 */
import type { Metadata } from "next";
import Link from "next/link";
import { EmptyState, PageHeader, Table, Td } from "@/components/ui/primitives";
import { Inert } from "@/components/ui/inert";
import { Time } from "@/components/ui/time";
import { userPage } from "@/lib/auth/user-route";
import { hasScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { listPatterns, type PatternHole } from "@/lib/review/patterns";

export const metadata: Metadata = { title: "Patterns" };
export const dynamic = "force-dynamic";

const percent = (rate: number | null) => (rate === null ? "—" : `${Math.round(rate * 100)}%`);

function duration(seconds: number): string {
  if (seconds === 0) return "none";
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3_600).toFixed(1)} h`;
}

function Holes({ holes }: { holes: PatternHole[] }) {
  if (holes.length === 0) return <span className="text-slate-500">the same every time</span>;
  return (
    <ul className="space-y-1">
      {holes.map((hole) => (
        <li key={hole.index}>
          <span className="text-slate-500">
            #{hole.index + 1} {hole.type}, {hole.distinct} values:
          </span>{" "}
          <Inert text={hole.values.map((value) => JSON.stringify(value)).join(", ") + (hole.distinct > hole.values.length ? ", …" : "")} />
        </li>
      ))}
    </ul>
  );
}

export default userPage("patterns:read", async function PatternsPage(user) {
  const { patterns } = await listPatterns(prisma(), user);
  const canDraft = hasScope(user, "skills:manage");
  return (
    <>
      <PageHeader
        title="Patterns"
        description="Scripts run more than once with other values: the same structure and the same tools, literals aside. The ones that cost reviewers the most time come first; they are the candidates for a reviewed skill."
      />
      {patterns.length === 0 ? (
        <EmptyState title="No pattern yet">When agents run the same script twice with other values, it is grouped here.</EmptyState>
      ) : (
        <Table caption="Patterns" headers={["Runs", "Review time", "Succeeded", "Agents", "Used", "What varies", "Examples", ...(canDraft ? ["Skill"] : [])]}>
          {patterns.map((pattern) => (
            <tr key={pattern.fingerprint} data-testid={`pattern-${pattern.fingerprint.slice(0, 12)}`}>
              <Td data-testid="count">{pattern.count}</Td>
              <Td>{duration(pattern.reviewSeconds)}</Td>
              <Td>{percent(pattern.successRate)}</Td>
              <Td>
                <Inert text={pattern.agents.join(", ")} />
              </Td>
              <Td>
                <Time iso={pattern.firstAt} /> – <Time iso={pattern.lastAt} />
              </Td>
              <Td data-testid="holes">
                <Holes holes={pattern.holes} />
              </Td>
              <Td>
                <ul>
                  {pattern.exampleRunIds.map((id) => (
                    <li key={id}>
                      <Link href={`/runs/${id}`} className="font-mono text-xs text-teal-800 underline-offset-2 hover:underline">
                        {id.slice(0, 8)}
                      </Link>
                    </li>
                  ))}
                </ul>
              </Td>
              {canDraft ? (
                <Td className="whitespace-nowrap">
                  <Link
                    href={`/skills/new?fingerprint=${pattern.fingerprint}`}
                    className="text-sm font-medium text-teal-800 underline-offset-2 hover:underline"
                  >
                    Draft a skill
                  </Link>
                </Td>
              ) : null}
            </tr>
          ))}
        </Table>
      )}
    </>
  );
});
