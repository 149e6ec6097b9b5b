/**
 * The run state machine against a real PostgreSQL: every transition in the table moves a run and
 * writes its audit event in the same transaction; every transition outside it is refused before
 * the database is touched; a run no longer in `from` is not moved (false), whatever `to` is.
 * createRun stores a new run with the same row and the same events, in the same order, as
 * inserting it submitted and moving it along each step would.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { recordAudit } from "@/lib/audit/record";
import type { TestDatabase } from "@/lib/testing/db";
import { databaseWithAgent, insertRun } from "@/lib/testing/run-rows";
import { NEXT_STATES, RUN_STATUSES, TERMINAL_STATUSES, canTransition, type RunStatus } from "@/lib/contracts/run-states";
import { SUBMITTED_CONTENT, contentDigests } from "@/lib/audit/run-content";
import { createRun, IllegalTransition, transitionRun, transitionRunReturning, type CreationStep } from "./states";

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

  it("transitionRunReturning moves the run like transitionRun and returns its row as a later read sees it, or null", async () => {
    const runId = await runIn("queued");
    const startedAt = new Date("2026-12-03T08:00:00.000Z");
    const move = { runId, from: "queued", to: "running", data: { startedAt, heartbeatAt: startedAt }, audit: { executorId: "x" } } as const;
    const row = await db.prisma.$transaction((tx) => transitionRunReturning(tx, system, move));
    expect(row).toEqual(await db.prisma.run.findUniqueOrThrow({ where: { id: runId } }));
    expect(row).toMatchObject({ status: "running", startedAt });
    const events = await db.prisma.auditEvent.findMany({ where: { subjectId: runId } });
    expect(events.map((e) => [e.action, e.data])).toEqual([["run.running", { executorId: "x" }]]);
    // A second claim finds it gone from `queued`: nothing moves, nothing is written.
    expect(await db.prisma.$transaction((tx) => transitionRunReturning(tx, system, move))).toBeNull();
    expect(await db.prisma.auditEvent.count({ where: { subjectId: runId } })).toBe(1);
  });

  describe("createRun", () => {
    const submitted = (purpose: string) => ({
      actor: system,
      data: { agentId, language: "javascript" as const, code: "return 1;", codeSha256: "c", purpose, inputsDigest: "i", requestDigest: "r", inputs: [] },
      audit: { codeSha256: "c", purpose },
    });
    const intake = (last: RunStatus): CreationStep[] => [
      { actor: { type: "system", name: "analysis" }, to: "analyzed", data: { javascript: "return 1;", capabilitySet: [] }, audit: { facts: "read_only" } },
      { actor: { type: "system", name: "policy" }, to: last, data: { decision: "allow", limits: { timeoutMs: 1000 } }, audit: { decision: "allow" } },
      ...(last === "auto_approved" ? [{ actor: { type: "system", name: "runs" }, to: "queued" } as const] : []),
    ];
    const eventsOf = async (runId: string) =>
      (await db.prisma.auditEvent.findMany({ where: { subjectId: runId }, orderBy: { id: "asc" } })).map(({ action, actorType, actorId, data }) => ({
        action,
        actorType,
        actorId,
        data,
      }));

    /** The same run the long way: inserted submitted, then one transitionRun per step. */
    async function walked(purpose: string, steps: CreationStep[]): Promise<string> {
      return db.prisma.$transaction(async (tx) => {
        const base = submitted(purpose);
        const run = await tx.run.create({ data: { ...base.data, status: "submitted" } });
        await recordAudit(tx, {
          actor: system,
          action: "run.submitted",
          subject: { type: "run", id: run.id },
          data: { ...base.audit, contentDigests: contentDigests(run, SUBMITTED_CONTENT) },
        });
        let from: RunStatus = "submitted";
        for (const step of steps) {
          expect(await transitionRun(tx, step.actor, { runId: run.id, from, to: step.to, data: step.data, audit: step.audit })).toBe(true);
          from = step.to;
        }
        return run.id;
      });
    }

    for (const last of ["auto_approved", "denied"] as const) {
      it(`stores the run and its events exactly as the step-by-step path does (ending ${last})`, async () => {
        const steps = intake(last);
        const created = await db.prisma.$transaction((tx) => createRun(tx, submitted(`one write ${last}`), steps));
        const stepwise = await walked(`one write ${last}`, steps);
        const one = await db.prisma.run.findUniqueOrThrow({ where: { id: created.id } });
        const other = await db.prisma.run.findUniqueOrThrow({ where: { id: stepwise } });
        expect(one.status).toBe(steps.at(-1)!.to);
        const comparable = ({ id: _id, createdAt: _c, updatedAt: _u, ...rest }: Record<string, unknown>) => rest;
        expect(comparable(one)).toEqual(comparable(other));
        const events = await eventsOf(created.id);
        expect(events.map((e) => e.action)).toEqual(["run.submitted", ...steps.map((s) => `run.${s.to}`)]);
        expect(events).toEqual(await eventsOf(stepwise));
        // A terminal step seals the run's (no) tool calls, as transitionRun does.
        if (last === "denied") expect(events.at(-1)!.data).toHaveProperty("toolCalls");
      });
    }

    it("refuses a path outside the table before writing anything", async () => {
      const before = await db.prisma.run.count();
      await expect(db.prisma.$transaction((tx) => createRun(tx, submitted("skips analysis"), [{ actor: system, to: "queued" }]))).rejects.toBeInstanceOf(
        IllegalTransition,
      );
      await expect(
        db.prisma.$transaction((tx) => createRun(tx, submitted("leaves a terminal state"), [...intake("denied"), { actor: system, to: "queued" }])),
      ).rejects.toBeInstanceOf(IllegalTransition);
      expect(await db.prisma.run.count()).toBe(before);
    });
  });
});
