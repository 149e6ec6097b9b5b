/**
 * Sign-out ends the session on the server, on real PostgreSQL with next-auth's own route handlers:
 * cookies come from its credentials callback, sign-out is its signout endpoint, and what a cookie
 * is worth is what its session endpoint says about it (that is what `auth()` reads in a request).
 * The console's doors (userRoute, userAction, userPage) then decide through currentUser.
 */
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { createUser, endSessions } from "./users";

const jar = vi.hoisted(() => ({ cookie: "" }));
vi.mock("@/lib/auth/next-auth", async (importOriginal) => {
  const actual = await importOriginal<typeof import("./next-auth")>();
  return {
    ...actual,
    // auth() inside a request: the session next-auth derives from the request's cookie.
    auth: async () => {
      const response = await actual.handlers.GET(new NextRequest("http://localhost/api/auth/session", { headers: { cookie: jar.cookie } }));
      return (await response.json()) as unknown;
    },
  };
});

const system: Actor = { type: "system", name: "test" };
const PASSWORD = "the reviewer's password";
let db: TestDatabase;
let reviewer: { id: string };

const pairs = (response: Response) =>
  response.headers
    .getSetCookie()
    .map((cookie) => cookie.split(";")[0])
    .join("; ");

async function post(path: string, cookie: string, form: Record<string, string>): Promise<Response> {
  const { handlers } = await import("./next-auth");
  const csrf = await handlers.GET(new NextRequest("http://localhost/api/auth/csrf"));
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  return handlers.POST(
    new NextRequest(`http://localhost${path}`, {
      method: "POST",
      headers: { cookie: [cookie, pairs(csrf)].filter(Boolean).join("; "), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...form, csrfToken, callbackUrl: "/" }),
    }),
  );
}

/** A session cookie from next-auth's credentials callback (one browser, one device). */
async function signIn(): Promise<string> {
  const cookie = pairs(await post("/api/auth/callback/credentials", "", { email: "reviewer@example.com", password: PASSWORD }));
  expect(cookie).toMatch(/authjs\.session-token=/);
  return cookie;
}

const signOut = (cookie: string) => post("/api/auth/signout", cookie, {});

async function doors(cookie: string) {
  jar.cookie = cookie;
  const { userRoute, userPage } = await import("./user-route");
  const { userAction } = await import("./user-action");
  const route = await userRoute("runs:review", async () => ({ ok: true }))(new NextRequest("http://localhost/api/queue/count"), undefined);
  const action = await userAction("runs:review", z.object({}).strict(), async () => "done")({});
  const page = await userPage(
    "runs:read",
    async () => "rendered",
  )({}).then(
    (value) => String(value),
    (error: { digest?: string }) => String(error.digest),
  );
  return { route: route.status, action: action.ok ? "ok" : action.error.code, page: page.startsWith("NEXT_REDIRECT") ? "login" : page };
}

const SIGNED_IN = { route: 200, action: "ok", page: "rendered" };
const ANONYMOUS = { route: 401, action: "unauthorized", page: "login" };
const version = async () => (await db.prisma.user.findUniqueOrThrow({ where: { id: reviewer.id } })).sessionVersion;
const signedOutEvents = () => db.prisma.auditEvent.count({ where: { action: "auth.signed_out", actorId: reviewer.id } });

beforeAll(async () => {
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url, AUTH_SECRET: "a-test-secret-of-at-least-32-characters!" });
  reviewer = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "reviewer@example.com", role: "reviewer", password: PASSWORD }));
});

afterAll(async () => {
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

describe("sessions", () => {
  it("a cookie copied before sign-out is anonymous afterwards, at every door, and so is the person's other device", async () => {
    const laptop = await signIn();
    const phone = await signIn();
    expect(await doors(laptop)).toEqual(SIGNED_IN);
    expect(await doors(phone)).toEqual(SIGNED_IN);

    const copied = laptop;
    await signOut(laptop);
    expect(await version()).toBe(1);
    expect(await signedOutEvents()).toBe(1);

    expect(await doors(copied)).toEqual(ANONYMOUS);
    expect(await doors(phone)).toEqual(ANONYMOUS);
    // Signing in again gives a session of the new version.
    expect(await doors(await signIn())).toEqual(SIGNED_IN);
  });

  it("a session whose version is older than the person's is anonymous, though its cookie is validly signed", async () => {
    const cookie = await signIn();
    jar.cookie = cookie;
    const { auth } = await import("./next-auth");
    const { currentUser } = await import("./session");
    const session = (await auth()) as { user: { id: string }; sessionVersion: number };
    expect(session).toMatchObject({ user: { id: reviewer.id }, sessionVersion: await version() });
    expect(await currentUser()).toMatchObject({ id: reviewer.id });
    await db.prisma.user.update({ where: { id: reviewer.id }, data: { sessionVersion: { increment: 1 } } });
    expect(await auth()).toMatchObject({ user: { id: reviewer.id } });
    expect(await currentUser()).toBeNull();
  });

  it("signing out with a cookie already ended changes and records nothing, so a stale copy cannot sign the person out again", async () => {
    const stale = await signIn();
    await signOut(stale);
    const fresh = await signIn();
    const [before, events] = [await version(), await signedOutEvents()];
    await signOut(stale);
    expect(await endSessions(db.prisma, reviewer.id, before - 1)).toBe(false);
    expect(await version()).toBe(before);
    expect(await signedOutEvents()).toBe(events);
    expect(await doors(fresh)).toEqual(SIGNED_IN);
  });
});
