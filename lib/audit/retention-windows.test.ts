/** The retention rules, pure: a class's window, a run's shortest and longest, and what is due when. */
import { describe, expect, it } from "vitest";
import { parseConfig } from "@/lib/broker/config";
import { planPurge } from "./retention";
import { DAY_MS, RETENTION_DEFAULT_DAYS, classDays, runWindows, windowOver, type PurgeableField } from "./retention-windows";

const days = { ...RETENTION_DEFAULT_DAYS };
const asOf = new Date("2026-06-01T00:00:00Z");
const endedDaysAgo = (n: number) => new Date(asOf.getTime() - n * DAY_MS);
const everything = {
  code: true,
  purpose: true,
  javascript: true,
  provenance: true,
  result: true,
  error: false,
  execution: true,
  plan: false,
  artifacts: true,
} satisfies Record<PurgeableField, boolean>;

describe("retention windows", () => {
  it("a class takes its own days, and a class without days (or unknown) takes default", () => {
    expect(classDays(days, "pii")).toBe(30);
    expect(classDays(days, "financial")).toBe(2555);
    expect(classDays(days, "internal")).toBe(90);
    expect(classDays(days, "phi")).toBe(365);
    expect(classDays(days, "not-a-class")).toBe(365);
    expect(classDays(days, null)).toBe(365);
  });

  it("a run's shortest and longest windows come from its classes; no classes means default", () => {
    expect(runWindows(days, ["internal", "pii", "financial"])).toEqual({ classes: ["financial", "internal", "pii"], shortest: 30, longest: 2555 });
    expect(runWindows(days, ["pii"])).toMatchObject({ shortest: 30, longest: 30 });
    expect(runWindows(days, [])).toMatchObject({ classes: [], shortest: 365, longest: 365 });
  });

  it("a window is over exactly when its days have passed since the run ended", () => {
    expect(windowOver(endedDaysAgo(30), 30, asOf)).toBe(true);
    expect(windowOver(new Date(endedDaysAgo(30).getTime() + 1), 30, asOf)).toBe(false);
  });

  it("result, logs, prompt and artifacts go at the shortest window; code and purpose stay until the longest", () => {
    const run = { classes: ["pii", "internal"], purged: {}, has: everything };
    expect(planPurge(days, { ...run, ended: endedDaysAgo(29) }, [], asOf)).toBeNull();
    expect(planPurge(days, { ...run, ended: endedDaysAgo(31) }, [], asOf)).toMatchObject({
      fields: ["result", "execution", "provenance", "artifacts"],
      windowDays: 30,
      shortestDays: 30,
      longestDays: 90,
    });
    expect(
      planPurge(days, { ...run, ended: endedDaysAgo(91), purged: { result: "t", execution: "t", provenance: "t", artifacts: "t" } }, [], asOf),
    ).toMatchObject({
      fields: ["code", "purpose", "javascript"],
      windowDays: 90,
    });
  });

  it("a tool call follows its tool's class; at the longest window every call left goes", () => {
    const run = { classes: ["pii", "internal"], purged: {}, has: everything };
    const calls = [
      { runId: "r", seq: 1, dataClass: "pii" },
      { runId: "r", seq: 2, dataClass: "internal" },
      { runId: "r", seq: 3, dataClass: null },
    ];
    expect(planPurge(days, { ...run, ended: endedDaysAgo(31) }, calls, asOf)?.toolCalls).toEqual([1]);
    expect(planPurge(days, { ...run, ended: endedDaysAgo(91) }, calls, asOf)?.toolCalls).toEqual([1, 2, 3]);
  });

  it("the config's retention key is closed: unknown classes are refused with their path, days are positive whole numbers", () => {
    expect(parseConfig({ servers: {} }, "a.json").retention.days).toEqual({ pii: 30, financial: 2555, internal: 90, default: 365 });
    expect(parseConfig({ servers: {}, retention: { days: { pii: 7, phi: 10 } } }, "a.json").retention.days).toEqual({
      pii: 7,
      phi: 10,
      financial: 2555,
      internal: 90,
      default: 365,
    });
    expect(() => parseConfig({ servers: {}, retention: { days: { secrets: 3 } } }, "a.json")).toThrow(/retention\.days: Unrecognized key: "secrets"/);
    expect(() => parseConfig({ servers: {}, retention: { days: { pii: 0 } } }, "a.json")).toThrow(/retention\.days\.pii/);
    expect(() => parseConfig({ servers: {}, retention: { days: { pii: 1.5 } } }, "a.json")).toThrow(/retention\.days\.pii/);
    expect(() => parseConfig({ servers: {}, retention: { months: {} } }, "a.json")).toThrow(/retention: Unrecognized key: "months"/);
  });
});
