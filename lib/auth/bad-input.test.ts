/**
 * Text PostgreSQL cannot store — U+0000 (refused in `text` and `jsonb`) and a lone surrogate
 * (refused in `jsonb`) — at every door of the console, on real PostgreSQL through the real doors:
 * the server actions as the forms call them, the JSON routes, the audit page's URL, the decision
 * service behind the JSON decision route. Each must answer a typed 400 or a form error, never a
 * 500. Only next-auth's session lookup is faked.
 *
 * A lone surrogate cannot survive a URL or a multipart form (both decode bytes as UTF-8 and turn it
 * into U+FFFD, which is storable); it can in a JSON body and in a server action's JSON-encoded
 * arguments, which reach userAction as plain values.
 */
import { NextRequest } from "next/server";
import { renderToStaticMarkup } from "react-dom/server";
import type { ReactElement } from "react";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import type { Actor } from "@/lib/contracts/scopes";
import { decideRun } from "@/lib/review/service";
import { revokeAgentAndStopRuns } from "@/lib/runs/cancel";
import { safeRedirect } from "@/app/(auth)/login/safe-redirect";
import { createAgent } from "./agents";
import { createUser } from "./users";

const session = vi.hoisted(() => ({ userId: null as string | null }));
vi.mock("@/lib/auth/next-auth", () => ({ auth: async () => (session.userId ? { user: { id: session.userId }, sessionVersion: 0 } : null) }));

const NUL = "\u0000";
const LONE = "\ud800";
const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
const people: Record<"admin" | "reviewer" | "compliance", { id: string; email: string }> = {} as never;
let runId: string;

function form(fields: Record<string, string>): FormData {
  const data = new FormData();
  for (const [key, value] of Object.entries(fields)) data.append(key, value);
  return data;
}

const as = (role: keyof typeof people) => {
  session.userId = people[role].id;
};

beforeAll(async () => {
  vi.stubEnv("__NEXT_EXPERIMENTAL_AUTH_INTERRUPTS", "true");
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
  for (const role of ["admin", "reviewer", "compliance"] as const) {
    const email = `${role}@example.com`;
    people[role] = { ...(await db.prisma.$transaction((tx) => createUser(tx, system, { email, role }))), email };
  }
  const agent = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "billing-bot", ownerEmail: people.admin.email }));
  // A run waiting for review, so a decision on it reaches the point where the comment is stored.
  const run = await db.prisma.run.create({
    data: {
      agentId: agent.agentId,
      status: "pending_review",
      language: "typescript",
      code: "return 1;",
      codeSha256: "a".repeat(64),
      purpose: "a run to decide",
      inputsDigest: "b".repeat(64),
      requestDigest: "c".repeat(64),
      approvalsRequired: 1,
    },
  });
  runId = run.id;
});
beforeEach(() => {
  session.userId = null;
});
afterAll(async () => {
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

describe("server actions refuse unstorable text with a form error", () => {
  it("agents: create and revoke", async () => {
    const { createAgentAction, revokeAgentAction } = await import("@/app/(console)/agents/actions");
    as("admin");
    expect(await createAgentAction(null, form({ name: `bot${NUL}`, ownerEmail: people.admin.email, scopes: "runs:read" }))).toMatchObject({
      ok: false,
      error: { code: "bad_request", status: 400, message: "name: contains U+0000, a character that cannot be stored" },
    });
    expect(await revokeAgentAction(null, form({ name: `billing-bot${NUL}` }))).toMatchObject({ ok: false, error: { code: "bad_request", status: 400 } });
    // The same door with a name it can look up answers as it always did.
    expect(await revokeAgentAction(null, form({ name: "no-such-agent" }))).toMatchObject({ ok: false, error: { code: "not_found" } });
  });

  it("policies: a draft", async () => {
    const { draftAction } = await import("@/app/(console)/policies/actions");
    as("admin");
    const text = `@id("x")\n@reason("y${NUL}")\npermit (principal, action, resource);`;
    expect(await draftAction(null, form({ text, intent: "save" }))).toMatchObject({ ok: false, error: { code: "bad_request", details: { field: "text" } } });
  });

  it("tools: accepting a tool", async () => {
    const { acceptToolAction } = await import("@/app/(console)/tools/actions");
    as("admin");
    expect(await acceptToolAction(null, form({ server: `ledger${NUL}`, tool: "x", schemaHash: "d".repeat(64) }))).toMatchObject({
      ok: false,
      error: { code: "bad_request", details: { field: "server" } },
    });
  });

  it("runs: a decision comment and a cancel", async () => {
    const { decideAction, cancelAction } = await import("@/app/(console)/runs/[id]/actions");
    as("reviewer");
    const fields = { runId, verdict: "reject", comment: `no${NUL}`, codeSha256: "a".repeat(64), capabilitySet: "[]", inputsDigest: "b".repeat(64) };
    expect(await decideAction(null, form(fields))).toMatchObject({ ok: false, error: { code: "bad_request", details: { field: "comment" } } });
    expect(await cancelAction(null, form({ runId: `${runId}${NUL}` }))).toMatchObject({ ok: false, error: { code: "bad_request" } });
  });

  it("an action sent something other than a form (a client may send any value) answers bad_request, never a TypeError", async () => {
    const { createAgentAction, revokeAgentAction } = await import("@/app/(console)/agents/actions");
    const { draftAction } = await import("@/app/(console)/policies/actions");
    const { acceptToolAction } = await import("@/app/(console)/tools/actions");
    const { decideAction, cancelAction } = await import("@/app/(console)/runs/[id]/actions");
    const { loginAction } = await import("@/app/(auth)/login/actions");
    as("admin");
    for (const sent of [{ name: "x" }, "name=x", null, 42] as unknown as FormData[]) {
      for (const action of [createAgentAction, revokeAgentAction, draftAction, acceptToolAction] as ((p: null, f: FormData) => Promise<unknown>)[]) {
        expect(await action(null, sent)).toMatchObject({ ok: false, error: { code: "bad_request", status: 400 } });
      }
      as("reviewer");
      for (const action of [decideAction, cancelAction] as ((p: null, f: FormData) => Promise<unknown>)[]) {
        expect(await action(null, sent)).toMatchObject({ ok: false, error: { code: "bad_request", status: 400 } });
      }
      as("admin");
      expect(await (loginAction as (p: unknown, f: FormData) => Promise<unknown>)(null, sent)).toEqual({ error: "Enter your email and password." });
    }
  });

  it("a lone surrogate in an action's arguments is refused too, naming the field", async () => {
    const { userAction } = await import("./user-action");
    as("admin");
    const revoke = userAction("agents:manage", z.object({ name: z.string().min(1) }).strict(), (actor, input) =>
      db.prisma.$transaction((tx) => revokeAgentAndStopRuns(tx, actor, input.name)),
    );
    for (const name of [`billing-bot${LONE}`, `billing-bot${NUL}`]) {
      const result = await revoke({ name });
      expect(result).toMatchObject({ ok: false, error: { code: "bad_request", details: { field: "name" } } });
    }
    const nested = userAction("agents:manage", z.object({ tags: z.array(z.object({ label: z.string() })) }).strict(), async () => "stored");
    expect(await nested({ tags: [{ label: "ok" }, { label: `x${LONE}` }] })).toMatchObject({ ok: false, error: { details: { field: "tags.1.label" } } });
    // Multipart forms carry no lone surrogate: it arrives as U+FFFD, storable, and is answered on its merits.
    const { revokeAgentAction } = await import("@/app/(console)/agents/actions");
    expect(await revokeAgentAction(null, form({ name: `billing-bot${LONE}` }))).toMatchObject({ ok: false, error: { code: "not_found" } });
  });
});

describe("the JSON decision door", () => {
  it("refuses a comment with either character before anything is stored", async () => {
    const reviewer = { type: "user" as const, ...people.reviewer, role: "reviewer" as const };
    for (const bad of [NUL, LONE]) {
      // As the route reads it: JSON.parse of the request body ("\u0000", "\ud800" escapes).
      const body = JSON.parse(
        JSON.stringify({
          verdict: "reject",
          comment: `no${bad}`,
          seen: { codeSha256: "a".repeat(64), capabilitySet: [], inputsDigest: "b".repeat(64), policyVersionId: null },
        }),
      ) as Record<string, unknown>;
      await expect(decideRun({ db: db.prisma, startExecution: () => {} }, reviewer, { ...body, runId })).rejects.toMatchObject({
        code: "bad_request",
        details: { field: "comment" },
      });
    }
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
    expect((await db.prisma.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("pending_review");
  });
});

describe("the JSON decision route's body", () => {
  const post = async (init: { body: BodyInit; headers?: Record<string, string> }) => {
    const { POST } = await import("@/app/api/queue/[runId]/decision/route");
    as("reviewer");
    const headers = { "content-type": "application/json", ...init.headers };
    const request = new NextRequest(`http://localhost/api/queue/${runId}/decision`, { method: "POST", duplex: "half", ...init, headers } as never);
    const response = await POST(request, { params: Promise.resolve({ runId }) });
    return { status: response.status, error: ((await response.json()) as { error: { code: string; message: string } }).error };
  };

  it("is 413 when too large, declared or streamed, and 400 when not JSON; nothing is stored", async () => {
    // Declared: refused on the header, before the (absent) bytes are read.
    const declared = await post({ body: "{}", headers: { "content-length": String(200 * 1024 * 1024) } });
    expect(declared).toEqual({ status: 413, error: expect.objectContaining({ code: "payload_too_large" }) });
    // Streamed without a length: refused once it passes 64 KiB, the rest never read.
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new TextEncoder().encode(`{"comment":"${"x".repeat(16 * 1024)}`));
      },
    });
    expect(await post({ body: endless })).toEqual({ status: 413, error: expect.objectContaining({ code: "payload_too_large" }) });
    expect(pulled).toBeLessThan(10);
    expect(await post({ body: "verdict=approve" })).toEqual({
      status: 400,
      error: expect.objectContaining({ code: "bad_request", message: "The body must be JSON." }),
    });
    // JSON after a byte-order mark is JSON (as request.json() reads it): it reaches the decision, which refuses the empty verdict.
    const bom = await post({ body: '\ufeff{"verdict":""}' });
    expect(bom.status).toBe(400);
    expect(bom.error.message).not.toBe("The body must be JSON.");
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
  });

  it("refuses a post from another site, as the proxy refuses a form's", async () => {
    const decision = JSON.stringify({ verdict: "reject", comment: "no" });
    expect(await post({ body: decision, headers: { origin: "http://evil.example", host: "localhost" } })).toEqual({
      status: 403,
      error: expect.objectContaining({
        code: "forbidden",
        message: 'Cross-site requests are refused: a request sent from "http://evil.example", another site.',
      }),
    });
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
  });

  it("takes a JSON object for the path's run only, sent as JSON", async () => {
    const decision = JSON.stringify({ verdict: "reject", comment: "no" });
    // A page on another site can post text/plain without asking: refused, though the text is JSON.
    expect(await post({ body: decision, headers: { "content-type": "text/plain" } })).toEqual({
      status: 400,
      error: expect.objectContaining({ message: "Send the decision as JSON, with Content-Type: application/json." }),
    });
    for (const body of ["[1,2]", "null", '"reject"', "5"]) {
      expect(await post({ body }), body).toEqual({ status: 400, error: expect.objectContaining({ message: "The body must be a JSON object." }) });
    }
    const elsewhere = JSON.stringify({ verdict: "reject", comment: "no", runId: "00000000-0000-4000-8000-000000000001" });
    expect(await post({ body: elsewhere })).toEqual({
      status: 400,
      error: expect.objectContaining({ message: "runId: the body names another run than the path." }),
    });
    expect(await db.prisma.review.count({ where: { runId } })).toBe(0);
  });
});

describe("URL doors", () => {
  it("the audit export answers 400 for a filter with U+0000; a URL cannot carry a lone surrogate", async () => {
    const { GET } = await import("@/app/api/audit/export/route");
    as("compliance");
    for (const key of ["q", "agent", "person", "tool", "codeHash", "since", "status"]) {
      const response = await GET(new NextRequest(`http://localhost/api/audit/export?format=jsonl&${key}=x%00y`), undefined);
      expect(response.status, key).toBe(400);
      expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "bad_request" });
    }
    const surrogate = await GET(new NextRequest(`http://localhost/api/audit/export?format=jsonl&q=x${LONE}`), undefined);
    expect(surrogate.status).toBe(200);
    await surrogate.text();
  });

  it("the audit page shows a form error for a filter, and a notice for a page cursor, with either character", async () => {
    const { default: AuditPage } = await import("@/app/(console)/audit/page");
    as("compliance");
    const cursor = Buffer.from(`${new Date().toISOString()}|${runId}`).toString("base64url");
    const render = async (params: Record<string, string>) =>
      renderToStaticMarkup((await AuditPage({ searchParams: Promise.resolve(params) } as never)) as ReactElement);
    for (const bad of [NUL, LONE]) {
      expect(await render({ q: `x${bad}` })).toContain(`q: contains ${bad === NUL ? "U+0000" : "U+D800"}, a character that cannot be stored`);
      expect(await render({ after: `${cursor}${bad}` })).toContain('data-code="bad_request"');
    }
    const searched = await db.prisma.auditEvent.findMany({ where: { action: "audit.searched" } });
    expect(searched).toEqual([]);
  });

  it("the review queue refuses U+0000 in a filter as every console route does, and what is not a filter, with 400 naming it", async () => {
    const { GET } = await import("@/app/api/queue/route");
    as("reviewer");
    const status = async (query: string) => {
      const response = await GET(new NextRequest(`http://localhost/api/queue?${query}`), undefined);
      return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
    };
    // A lone surrogate cannot survive a URL: it arrives as U+FFFD, which is text like any other.
    expect((await status(`agent=x${LONE}&effect=write`)).status).toBe(200);
    for (const [query, named] of [
      ["agent=x%00y", "agent"],
      ["effect=%00", "effect"],
      ["limit=-1", "limit"],
      ["status=%00", "status"],
      ["agent=", "agent"],
      ["agent=a&agent=b", "agent"],
    ]) {
      const answer = await status(query!);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error).toMatchObject({ code: "bad_request", message: expect.stringContaining(named!) });
    }
  });

  it("sign-in's return path is a path on this site or /", () => {
    for (const bad of [`/runs${NUL}`, `/runs${LONE}`, "//evil.example", "/\\evil.example", "https://evil.example", "/a b", undefined, ["/x"]]) {
      expect(safeRedirect(bad)).toBe("/");
    }
    expect(safeRedirect("/audit?q=x%00&since=2026-11-30")).toBe("/audit?q=x%00&since=2026-11-30");
  });
});
