/**
 * run.viewed: one event per view of a run's console page; a live refresh of the page already on
 * screen adds none, and a request that only claims to be a refresh cannot read a run unaudited.
 * auth.forbidden: written for refusals of an actor, never for other errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { AppError } from "@/lib/errors";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { isPageRefresh, recordForbidden, recordRunViewed } from "./access";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let reviewer: Extract<Actor, { type: "user" }>;
let other: Extract<Actor, { type: "user" }>;

beforeAll(async () => {
  db = await createTestDatabase();
  const a = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "r1@example.com", role: "reviewer" }));
  const b = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "r2@example.com", role: "reviewer" }));
  reviewer = { type: "user", ...a };
  other = { type: "user", ...b };
});
afterAll(() => db?.drop());

const RUN = "11111111-1111-4111-8111-111111111111";
const PAGE = `/runs/${RUN}`;
const views = () => db.prisma.auditEvent.findMany({ where: { action: "run.viewed", subjectId: RUN }, orderBy: { id: "asc" } });

describe("isPageRefresh", () => {
  const h = (headers: Record<string, string>) => new Headers(headers);
  it("is a fetch sent from the page itself, or a server action from it", () => {
    expect(isPageRefresh(h({ "sec-fetch-mode": "cors", referer: `http://localhost:3000${PAGE}` }), PAGE)).toBe(true);
    expect(isPageRefresh(h({ "sec-fetch-mode": "cors", referer: `http://localhost:3000${PAGE}`, "next-action": "abc" }), PAGE)).toBe(true);
  });
  it("is not a page load or reload, nor a client-side navigation from another page", () => {
    expect(isPageRefresh(h({ "sec-fetch-mode": "navigate" }), PAGE)).toBe(false);
    expect(isPageRefresh(h({ "sec-fetch-mode": "navigate", referer: `http://localhost:3000${PAGE}` }), PAGE)).toBe(false);
    expect(isPageRefresh(h({ "sec-fetch-mode": "cors", referer: "http://localhost:3000/queue" }), PAGE)).toBe(false);
    expect(isPageRefresh(h({ "sec-fetch-mode": "cors", referer: "http://localhost:3000/runs/22222222-2222-4222-8222-222222222222" }), PAGE)).toBe(false);
    expect(isPageRefresh(h({ "sec-fetch-mode": "cors" }), PAGE)).toBe(false);
    expect(isPageRefresh(h({ referer: "not a url" }), PAGE)).toBe(false);
  });
});

describe("recordRunViewed", () => {
  it("records each view, skips refreshes covered by the viewer's own earlier view, and never skips an uncovered one", async () => {
    // A "refresh" with no recorded view before it (a crafted request): recorded.
    expect(await recordRunViewed(db.prisma, reviewer, RUN, { refresh: true, status: "pending_review" })).toBe(true);
    // Live refreshes of that view: nothing.
    for (let i = 0; i < 5; i++) expect(await recordRunViewed(db.prisma, reviewer, RUN, { refresh: true, status: "pending_review" })).toBe(false);
    // A second opening: recorded.
    expect(await recordRunViewed(db.prisma, reviewer, RUN, { refresh: false, status: "pending_review" })).toBe(true);
    // Someone else's view does not cover this person's refresh.
    expect(await recordRunViewed(db.prisma, other, RUN, { refresh: true, status: "succeeded" })).toBe(true);
    const events = await views();
    expect(events.map((e) => [e.actorId, e.data])).toEqual([
      [reviewer.id, { status: "pending_review" }],
      [reviewer.id, { status: "pending_review" }],
      [other.id, { status: "succeeded" }],
    ]);
    expect(events[0]).toMatchObject({ actorType: "user", subjectType: "run", subjectId: RUN });
  });
});

describe("recordForbidden", () => {
  it("records refusals of an actor with scope and door, and nothing for other errors or without an actor", async () => {
    const refused = new AppError("forbidden", "needs audit:read", { details: { scope: "audit:read" } });
    await recordForbidden(db.prisma, reviewer, refused, "page");
    await recordForbidden(db.prisma, null, refused, "page");
    await recordForbidden(db.prisma, reviewer, new AppError("conflict", "changed"), "action");
    await recordForbidden(db.prisma, reviewer, new Error("boom"), "action");
    const events = await db.prisma.auditEvent.findMany({ where: { action: "auth.forbidden" } });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      actorType: "user",
      actorId: reviewer.id,
      subjectType: "user",
      subjectId: reviewer.id,
      data: { scope: "audit:read", door: "page" },
    });
  });
});
