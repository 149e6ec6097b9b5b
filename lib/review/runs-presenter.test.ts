/**
 * The runs list's filters on a real database: closed parsing (every bad value refused by name
 * with a typed error, never ignored), and each filter narrowing the list. Also the dashboard's
 * empty chart on an installation without runs: "No runs yet" with the MCP endpoint to connect.
 */
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunsPerDay } from "@/components/dashboard/charts";
import { NoRunsYet } from "@/components/dashboard/no-runs-yet";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { AppError } from "@/lib/errors";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { hasRuns, parseRunFilters, runFiltersQuery, runsList, type RunFilters } from "./runs-presenter";

const system: Actor = { type: "system", name: "runs-list-test" };

/** The message of the AppError parseRunFilters throws for these parameters. */
function refusal(params: Record<string, string | string[] | undefined>): AppError {
  try {
    parseRunFilters(params);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("bad_request");
    return error as AppError;
  }
  throw new Error(`accepted ${JSON.stringify(params)}`);
}

describe("parseRunFilters", () => {
  it("reads every filter, and an empty value as any", () => {
    expect(parseRunFilters({ status: "denied", decision: "deny", agent: "crm-bot", from: "2026-11-01", to: "2026-11-30" })).toEqual({
      status: "denied",
      decision: "deny",
      agent: "crm-bot",
      from: "2026-11-01",
      to: "2026-11-30",
    });
    expect(parseRunFilters({ status: "", decision: "", agent: "", from: "", to: "" })).toEqual({});
    expect(parseRunFilters({})).toEqual({});
    expect(runFiltersQuery(parseRunFilters({ status: "", agent: "crm-bot", to: "2026-11-30" })).toString()).toBe("agent=crm-bot&to=2026-11-30");
  });

  it("refuses a status or decision outside the vocabulary, naming the parameter and what it must be", () => {
    expect(refusal({ status: "bogus" }).message).toMatch(/status: must be one of submitted, .*cancelled/);
    expect(refusal({ decision: "maybe" }).message).toMatch(/decision: must be one of allow, escalate, deny/);
  });

  it("refuses days that are not on the calendar and a range that ends before it starts", () => {
    for (const from of ["2026-02-30", "2026-13-45", "yesterday", "2026-11-30T10:00Z", "30/11/2026", "0000-01-01", "1969-12-31"])
      expect(refusal({ from }).message).toMatch(/from: must be a calendar day/);
    expect(refusal({ from: "2026-11-30", to: "2026-11-01" }).message).toMatch(/to: must not be before from/);
    expect(parseRunFilters({ from: "2026-11-30", to: "2026-11-30" })).toEqual({ from: "2026-11-30", to: "2026-11-30" });
  });

  it("refuses unknown and repeated parameters, and text PostgreSQL cannot store", () => {
    expect(refusal({ sort: "oldest" }).message).toMatch(/sort: not a filter of this list/);
    expect(refusal({ status: ["denied", "failed"] }).message).toMatch(/status: give it once/);
    expect(refusal({ agent: "crm\u0000bot" }).message).toMatch(/agent: contains U\+0000/);
    expect(refusal({ agent: "x".repeat(201) }).message).toMatch(/agent: must be at most 200 characters/);
  });
});

describe("runsList and hasRuns", () => {
  let db: TestDatabase;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    expect(await hasRuns(db.prisma)).toBe(false);
    await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
    const crm = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "crm-bot", ownerEmail: "owner@example.com" }));
    const billing = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "billing-bot", ownerEmail: "owner@example.com" }));
    const rows = [
      { key: "allowed", agentId: crm.agentId, status: "succeeded", decision: "allow", createdAt: "2026-11-02T23:59:59.999Z" },
      { key: "denied", agentId: crm.agentId, status: "denied", decision: "deny", createdAt: "2026-11-03T00:00:00.000Z" },
      { key: "pending", agentId: billing.agentId, status: "pending_review", decision: "escalate", createdAt: "2026-11-04T12:00:00.000Z" },
    ] as const;
    for (const row of rows) {
      const run = await db.prisma.run.create({
        data: {
          agentId: row.agentId,
          status: row.status,
          decision: row.decision,
          language: "typescript",
          code: "return 1;",
          codeSha256: "a".repeat(64),
          purpose: `the ${row.key} run`,
          inputsDigest: "b".repeat(64),
          requestDigest: "c".repeat(64),
          createdAt: new Date(row.createdAt),
        },
      });
      ids[row.key] = run.id;
    }
  });
  afterAll(() => db.drop());

  const listed = async (filters: RunFilters) => (await runsList(db.prisma, filters)).runs.map((run) => run.id);

  it("lists every run newest first without filters, and the agents to filter by", async () => {
    expect(await hasRuns(db.prisma)).toBe(true);
    const list = await runsList(db.prisma, {});
    expect(list.runs.map((run) => run.id)).toEqual([ids.pending, ids.denied, ids.allowed]);
    expect(list.agents).toEqual(["billing-bot", "crm-bot"]);
    expect(list.more).toBe(false);
    expect((await runsList(db.prisma, {}, 2)).more).toBe(true);
  });

  it("narrows by status, decision and agent", async () => {
    expect(await listed({ status: "denied" })).toEqual([ids.denied]);
    expect(await listed({ decision: "escalate" })).toEqual([ids.pending]);
    expect(await listed({ agent: "crm-bot" })).toEqual([ids.denied, ids.allowed]);
    expect(await listed({ agent: "crm-bot", decision: "allow" })).toEqual([ids.allowed]);
    expect(await listed({ agent: "no-such-bot" })).toEqual([]);
  });

  it("narrows by whole UTC days, both ends included", async () => {
    expect(await listed({ from: "2026-11-03" })).toEqual([ids.pending, ids.denied]);
    expect(await listed({ to: "2026-11-02" })).toEqual([ids.allowed]);
    expect(await listed({ from: "2026-11-03", to: "2026-11-03" })).toEqual([ids.denied]);
    expect(await listed({ from: "2026-11-05" })).toEqual([]);
  });
});

describe("the dashboard's chart without runs", () => {
  const days = [{ day: "2026-11-30", succeeded: 0, failed: 0, denied: 0, other: 0 }];

  it("says No runs yet and shows the MCP endpoint and the snippets an agent's configuration needs", () => {
    const endpoint = "http://127.0.0.1:3000/api/mcp";
    const html = renderToStaticMarkup(createElement(RunsPerDay, { days, empty: createElement(NoRunsYet, { endpoint }) }));
    expect(html).toContain("No runs yet");
    expect(html).toContain(`claude mcp add --transport http airlock ${endpoint} --header &quot;Authorization: Bearer alk_…&quot;`);
    expect(html).toContain(`&quot;url&quot;: &quot;${endpoint}&quot;`);
    expect(html).toContain("token was printed when Airlock first started");
    expect(html).not.toContain('role="img"');
  });

  it("draws the bars once a day has a run", () => {
    const html = renderToStaticMarkup(createElement(RunsPerDay, { days: [{ ...days[0]!, succeeded: 1 }], empty: "No runs yet" }));
    expect(html).toContain('role="img"');
    expect(html).not.toContain("No runs yet");
  });
});
