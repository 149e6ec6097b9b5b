/**
 * The console user's route and page adapters (lib/auth/user-route.ts) on real PostgreSQL; only
 * next-auth's session lookup is faked. Routes answer AppErrors as JSON with their status and
 * audit refusals; pages turn AppErrors into 401/403/404 interrupts or render the code and message
 * — never a 500 for an AppError that is not a server fault.
 */
import { globSync, readFileSync } from "node:fs";
import { NextRequest } from "next/server";
import { renderToStaticMarkup } from "react-dom/server";
import type { ReactElement } from "react";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { setEnvForChildren } from "@/lib/env";
import { AppError } from "@/lib/errors";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser } from "./users";

const session = vi.hoisted(() => ({ userId: null as string | null }));
vi.mock("@/lib/auth/next-auth", () => ({ auth: async () => (session.userId ? { user: { id: session.userId }, sessionVersion: 0 } : null) }));

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let reviewer: { id: string };

beforeAll(async () => {
  vi.stubEnv("__NEXT_EXPERIMENTAL_AUTH_INTERRUPTS", "true"); // next.config.js: experimental.authInterrupts
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
  reviewer = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "reviewer@example.com", role: "reviewer" }));
});
beforeEach(() => {
  session.userId = null;
});
afterAll(async () => {
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

const forbiddenEvents = (actorId: string) => db.prisma.auditEvent.findMany({ where: { action: "auth.forbidden", actorId }, orderBy: { id: "asc" } });
const get = (path: string) => new NextRequest(`http://localhost${path}`);

/** The digest Next gives its interrupts (notFound, forbidden, redirect). */
async function interrupt(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(Error);
  return String((error as { digest?: string }).digest);
}

describe("userRoute", () => {
  it("answers the handler's value as JSON, and anonymous callers 401 without calling it", async () => {
    const { userRoute } = await import("./user-route");
    const handler = vi.fn(async () => ({ waitingForYou: 2 }));
    const route = userRoute("runs:review", handler);
    const anonymous = await route(get("/api/queue/count"), undefined);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: "unauthorized", message: "Sign in first." } });
    expect(handler).not.toHaveBeenCalled();
    session.userId = reviewer.id;
    const ok = await route(get("/api/queue/count"), undefined);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    expect(await ok.json()).toEqual({ waitingForYou: 2 });
  });

  it("a missing scope is 403, audited with the path as the door; a service's refusal with its reason and the named door", async () => {
    const { userRoute } = await import("./user-route");
    session.userId = reviewer.id;
    const refused = await userRoute("audit:export", async () => ({}))(get("/api/audit/export?format=csv"), undefined);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { code: "forbidden", details: { scope: "audit:export" } } });
    const own = userRoute(
      "runs:review",
      async () => {
        throw new AppError("forbidden", "You own the agent.", { details: { reason: "own_agent" } });
      },
      { door: "api:/api/queue/decision" },
    );
    expect((await own(get("/api/queue/x/decision"), undefined)).status).toBe(403);
    expect((await forbiddenEvents(reviewer.id)).map((e) => e.data)).toEqual([
      { scope: "audit:export", door: "api:/api/audit/export" },
      { scope: null, door: "api:/api/queue/decision", reason: "own_agent" },
    ]);
  });

  it("maps every AppError to its status and JSON; anything else is a 500 without its message", async () => {
    const { userRoute } = await import("./user-route");
    session.userId = reviewer.id;
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const failing = (error: unknown) =>
      userRoute("runs:review", async () => {
        throw error;
      })(get("/api/queue"), undefined);
    for (const [code, status] of [
      ["bad_request", 400],
      ["not_found", 404],
      ["conflict", 409],
      ["rate_limited", 429],
    ] as const) {
      const response = await failing(new AppError(code, `a ${code}`, { details: { field: "x" } }));
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ error: { code, message: `a ${code}`, status, details: { field: "x" } } });
    }
    expect(logged).not.toHaveBeenCalled();
    const crash = await failing(new Error("password=hunter2"));
    expect(crash.status).toBe(500);
    const text = await crash.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: "internal", message: "Internal error" } });
    expect(text).not.toContain("hunter2");
    expect(logged).toHaveBeenCalledOnce();
    logged.mockRestore();
  });

  it("refuses a query parameter the route does not take, or one given twice, naming it, before the handler runs", async () => {
    const { userRoute } = await import("./user-route");
    session.userId = reviewer.id;
    const handler = vi.fn(async () => ({ ok: true }));
    const none = userRoute("runs:review", handler);
    const some = userRoute("runs:review", handler, { query: ["agent", "effect"] });
    const answers = [
      [none, "/api/queue/count?x=1", '"x" is not a parameter of this address; it takes no parameters.'],
      [some, "/api/queue?agent=a&mode=b", '"mode" is not a parameter of this address; it takes agent, effect.'],
      [some, "/api/queue?agent=a&agent=b", '"agent" is given more than once; give it once.'],
      [some, "/api/queue?agent=a%00b", '"agent" holds U+0000, a character that cannot be stored or searched.'],
    ] as const;
    for (const [route, path, message] of answers) {
      const response = await route(get(path), undefined);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: "bad_request", message } });
    }
    expect(handler).not.toHaveBeenCalled();
    expect((await some(get("/api/queue?agent=a&effect=write"), undefined)).status).toBe(200);
    // The app's own routes: the badge's count takes nothing, the queue its two filters.
    const count = await import("@/app/api/queue/count/route");
    const queue = await import("@/app/api/queue/route");
    expect((await count.GET(get("/api/queue/count?x=1&x=2"), undefined)).status).toBe(400);
    expect((await count.GET(get("/api/queue/count"), undefined)).status).toBe(200);
    expect((await queue.GET(get("/api/queue?effect=write&effect=read_only"), undefined)).status).toBe(400);
  });

  it("passes a handler's own Response through", async () => {
    const { userRoute } = await import("./user-route");
    session.userId = reviewer.id;
    const response = await userRoute("runs:review", async () => new Response("a,b\n", { headers: { "content-type": "text/csv" } }))(get("/x"), undefined);
    expect(response.headers.get("content-type")).toBe("text/csv");
    expect(await response.text()).toBe("a,b\n");
  });
});

describe("userPage", () => {
  it("renders a 4xx AppError's code and message instead of failing the page", async () => {
    const { userPage } = await import("./user-route");
    session.userId = reviewer.id;
    const Page = userPage("runs:read", async () => {
      throw new AppError("conflict", "This run changed while you were looking at it.");
    });
    const html = renderToStaticMarkup((await Page({})) as ReactElement);
    expect(html).toContain('data-code="conflict"');
    expect(html).toContain("This run changed while you were looking at it.");
    const Fine = userPage("runs:read", async (user: { email: string }) => `hello ${user.email}`);
    expect(await Fine({})).toBe("hello reviewer@example.com");
  });

  it("not_found is a 404, forbidden a 403 (audited, door page), anonymous and unauthorized go to /login", async () => {
    const { userPage } = await import("./user-route");
    const throwing = (error: AppError) =>
      userPage("runs:read", async () => {
        throw error;
      });
    expect(await interrupt(userPage("runs:read", async () => "x")({}) as Promise<unknown>)).toMatch(/^NEXT_REDIRECT;.*\/login/);
    session.userId = reviewer.id;
    expect(await interrupt(throwing(new AppError("not_found", "No run x."))({}) as Promise<unknown>)).toBe("NEXT_HTTP_ERROR_FALLBACK;404");
    expect(await interrupt(userPage("audit:export", async () => "x")({}) as Promise<unknown>)).toBe("NEXT_HTTP_ERROR_FALLBACK;403");
    expect(await interrupt(throwing(new AppError("unauthorized", "Sign in."))({}) as Promise<unknown>)).toMatch(/^NEXT_REDIRECT;.*\/login/);
    expect((await forbiddenEvents(reviewer.id)).at(-1)!.data).toEqual({ scope: "audit:export", door: "page" });
    // A server fault is not dressed up: it reaches the error boundary (app/error.tsx).
    await expect(throwing(new AppError("database_unavailable", "Database down."))({})).rejects.toThrow("Database down.");
  });
});

describe("console pages", () => {
  it("every signed-in page is a userPage, so each AppError becomes what a page can say", () => {
    const pages = globSync("app/(console)/**/page.tsx");
    expect(pages.length).toBeGreaterThanOrEqual(9);
    const bare = pages.filter((file) => !/^export default userPage\(\s*"[a-z]+:[a-z]+",\s*async function \w+\(/m.test(readFileSync(file, "utf8")));
    expect(bare).toEqual([]);
  });
});
