/**
 * The run state machine against a real PostgreSQL: every transition in the table moves a run and
 * writes its audit event in the same transaction; every transition outside it is refused before
 * the database is touched; a run no longer in `from` is not moved (false), whatever `to` is.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { recordAudit } from "@/lib/audit/record";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { NEXT_STATES, RUN_STATUSES, TERMINAL_STATUSES, canTransition, type RunStatus } from "@/lib/contracts/run-states";
import { IllegalTransition, transitionRun } from "./states";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let agentId: string;

const runIn = (status: RunStatus) => insertRun(db, agentId, { status, purpose: "state test" });

beforeAll(async () => {
  ({ db, agentId } = await databaseWithAgent("states"));
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe("run state machine", () => {
  it("classifies every status; terminal states have no way out", () => {
    expect(new Set(RUN_STATUSES)).toEqual(new Set(Object.keys(NEXT_STATES)));
    expect(TERMINAL_STATUSES.sort()).toEqual([
      "cancelled",
      "changes_requested",
      "check_failed",
      "denied",
      "expired",
      "failed",
      "rejected",
      "succeeded",
      "timed_out",
      "withheld",
    ]);
  });

  it("docs/run-states.md publishes exactly the transitions of the table, every one enabled", () => {
    const doc = readFileSync(new URL("../../docs/run-states.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/^\| `(\w+)` +\| `(\w+)` +\| (enabled|planned[^|]*?) *\|/gm)].map(([, from, to, status]) => ({
      from,
      to,
      enabled: status === "enabled",
    }));
    const documented = rows
      .filter((r) => r.enabled)
      .map((r) => `${r.from} → ${r.to}`)
      .sort();
    const enabled = RUN_STATUSES.flatMap((from) => (NEXT_STATES[from] as readonly string[]).map((to) => `${from} → ${to}`)).sort();
    expect(documented).toEqual(enabled);
    expect(rows.filter((r) => !r.enabled)).toEqual([]);
  });

  it("performs every transition in the table, audited in the same transaction", async () => {
    let walked = 0;
    for (const from of RUN_STATUSES) {
      for (const to of NEXT_STATES[from] as readonly RunStatus[]) {
        const runId = await runIn(from);
        // A held result ends succeeded only by a release: releasedAt, with its event (migration triggers).
        const released = from === "pending_release" && to === "succeeded";
        const moved = await db.prisma.$transaction(async (tx) => {
          const done = await transitionRun(tx, system, { runId, from, to, audit: { walked: true }, ...(released ? { data: { releasedAt: new Date() } } : {}) });
          if (released) await recordAudit(tx, { actor: system, action: "run.result_released", subject: { type: "run", id: runId }, data: { released: true } });
          return done;
        });
        expect(moved, `${from} → ${to}`).toBe(true);
        expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe(to);
        const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { subjectId: runId, action: `run.${to}` }, orderBy: { id: "desc" } });
        expect(event).toMatchObject({ action: `run.${to}`, data: { walked: true } });
        walked++;
      }
    }
    expect(walked).toBe(Object.values(NEXT_STATES).reduce((n, next) => n + next.length, 0));
  });

  it("refuses every transition outside the table without touching the run", async () => {
    const runIds = new Map<RunStatus, string>();
    for (const status of RUN_STATUSES) runIds.set(status, await runIn(status));
    let refused = 0;
    for (const from of RUN_STATUSES) {
      for (const to of RUN_STATUSES) {
        if (canTransition(from, to)) continue;
        const runId = runIds.get(from)!;
        await expect(
          db.prisma.$transaction((tx) => transitionRun(tx, system, { runId, from, to })),
          `${from} → ${to}`,
        ).rejects.toBeInstanceOf(IllegalTransition);
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(180);
    for (const [status, runId] of runIds) expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe(status);
    expect(await db.prisma.auditEvent.count({ where: { subjectId: { in: [...runIds.values()] } } })).toBe(0);
  });

  it("a run that already left `from` is not moved, and no event is written", async () => {
    const runId = await runIn("succeeded");
    const moved = await db.prisma.$transaction((tx) => transitionRun(tx, system, { runId, from: "running", to: "failed" }));
    expect(moved).toBe(false);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("succeeded");
    expect(await db.prisma.auditEvent.count({ where: { subjectId: runId } })).toBe(0);
  });
});
