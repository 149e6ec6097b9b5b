/**
 * Standing approvals as a table (server component), on the skills list and on a version's page:
 * the version, agents, bounds (JSON, as text), window, uses, what remains, state, reason and who
 * proposed, confirmed or revoked it. Admins (skills:manage) get Confirm on another admin's
 * proposal and Revoke on any approval not revoked; the services refuse the rest (the proposer's
 * own confirmation). Agent names, bounds and reasons are rendered through Inert.
 */
import Link from "next/link";
import { Inert } from "@/components/ui/inert";
import { Badge, Table, Td, type Tone } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import type { StandingRow } from "@/lib/skills/standing";
import type { StandingState } from "./actions";
import { StandingButton } from "./forms";
import { Json } from "./parts";

type Action = (state: StandingState, form: FormData) => Promise<StandingState>;

const TONE: Record<StandingRow["state"], Tone> = {
  proposed: "warn",
  active: "good",
  not_yet: "info",
  expired: "neutral",
  exhausted: "neutral",
  revoked: "bad",
};

export function StandingTable({
  rows,
  viewer,
  confirmAction,
  revokeAction,
}: {
  rows: StandingRow[];
  viewer: { email: string; canManage: boolean };
  confirmAction: Action;
  revokeAction: Action;
}) {
  return (
    <Table
      caption="Standing approvals"
      headers={["Skill", "Agents", "Bounds", "Window", "Uses", "Remaining", "State", "Reason", "People", ...(viewer.canManage ? ["Actions"] : [])]}
    >
      {rows.map((row) => (
        <tr key={row.id} data-testid="standing-row">
          <Td className="whitespace-nowrap">
            <Link href={`/skills/${row.skillVersionId}`} className="font-mono text-xs text-teal-800 underline-offset-2 hover:underline">
              {row.skill} v{row.version}
            </Link>
          </Td>
          <Td>
            <Inert text={row.agents.join(", ")} />
          </Td>
          <Td className="min-w-56">
            <Json value={row.bounds} className="max-h-40 max-w-xs" compact />
          </Td>
          <Td className="text-xs">
            <Time iso={row.notBefore} /> – <Time iso={row.notAfter} />
          </Td>
          <Td data-testid="uses" className="whitespace-nowrap">
            {row.uses} of {row.maxUses}
          </Td>
          <Td data-testid="remaining">{row.remaining}</Td>
          <Td data-testid="state">
            <Badge tone={TONE[row.state]}>{row.state.replaceAll("_", " ")}</Badge>
          </Td>
          <Td>
            <Inert text={row.reason} />
          </Td>
          <Td className="text-xs">
            <p>proposed by {row.proposedBy}</p>
            {row.confirmedBy ? <p>confirmed by {row.confirmedBy}</p> : null}
            {row.revokedBy ? <p>revoked by {row.revokedBy}</p> : null}
          </Td>
          {viewer.canManage ? (
            <Td>
              <div className="flex flex-col items-start gap-2">
                {row.state === "proposed" && row.proposedBy !== viewer.email ? <StandingButton id={row.id} label="Confirm" action={confirmAction} /> : null}
                {row.state === "proposed" && row.proposedBy === viewer.email ? (
                  <p className="text-xs text-amber-800">You proposed it; a second admin confirms it.</p>
                ) : null}
                {row.state !== "revoked" ? <StandingButton id={row.id} label="Revoke" action={revokeAction} /> : null}
              </div>
            </Td>
          ) : null}
        </tr>
      ))}
    </Table>
  );
}
