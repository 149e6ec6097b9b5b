/**
 * The authorization matrix, generated from the scope table (lib/contracts/scopes.ts ROLE_SCOPES)
 * and from the code itself: every console page and route handler is found on disk, its scope is
 * read from its `userPage("…")` / `userRoute("…")`, and each is requested as every role —
 * anonymous, compliance, reviewer, admin — against `next start`. Allowed roles must get through
 * (not 401/403, not a redirect to sign-in), every other role gets 403, anonymous gets sent to
 * sign-in (pages) or 401 (routes). A page or route with no recognized scope must be listed in
 * SELF_GUARDED with what it answers anyone; a new one that is neither fails this test.
 *
 * An agent's bearer token opens no console door: with it, every page and route answers as to
 * anonymous.
 *
 * Server actions are found in the build's manifest (.next/server/server-reference-manifest.json,
 * ids exist only after `next build`), each called as the browser calls it (React's encodeReply,
 * `Next-Action`) with input its schema accepts but naming nothing that exists, as anonymous, with
 * an agent's token, and as every role: refused (`unauthorized` / `forbidden`) exactly when the
 * role lacks the action's scope, which is read from its source. A new action without an entry in
 * ACTIONS fails the test. The owner-reviewer row: a reviewer deciding a run of an agent they own
 * is refused, and another reviewer's decision of the same run goes through.
 *
 * The agent door is crossed the same way: each MCP tool (its declared scope) is called by agent
 * tokens holding one scope each, and answers FORBIDDEN exactly when the token lacks the scope.
 */
import { globSync, readFileSync } from "node:fs";
import type { APIRequestContext } from "@playwright/test";
import { createAgent } from "../lib/auth/agents";
import { DEFAULT_AGENT_SCOPES, ROLE_SCOPES, type Role, type Scope } from "../lib/contracts/scopes";
import { createPrismaClient } from "../lib/db";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterPreview, expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { createReviewers } from "./reviewers";
import { ACTIONS, OPEN_ACTIONS, callAction, manifestActions, sessionCookie } from "./server-actions";

/** Files that guard themselves (no console session) and what an anonymous GET must get. */
const SELF_GUARDED: Record<string, { path: string; anonymous: number }> = {
  "app/(auth)/login/page.tsx": { path: "/login", anonymous: 200 },
  "app/api/auth/[...nextauth]/route.ts": { path: "/api/auth/csrf", anonymous: 200 },
  "app/api/mcp/route.ts": { path: "/api/mcp", anonymous: 401 },
  "app/api/health/route.ts": { path: "/api/health", anonymous: 200 },
  "app/api/metrics/route.ts": { path: "/api/metrics", anonymous: 200 },
  // No OAuth authorization server: JSON saying how an agent gets a token (lib/mcp/oauth-discovery.ts).
  "app/authorize/route.ts": { path: "/authorize", anonymous: 404 },
  "app/token/route.ts": { path: "/token", anonymous: 404 },
  "app/.well-known/oauth-protected-resource/route.ts": { path: "/.well-known/oauth-protected-resource", anonymous: 200 },
  "app/.well-known/oauth-protected-resource/[...resource]/route.ts": { path: "/.well-known/oauth-protected-resource/api/mcp", anonymous: 200 },
  "app/.well-known/oauth-authorization-server/[[...path]]/route.ts": { path: "/.well-known/oauth-authorization-server", anonymous: 404 },
  "app/.well-known/openid-configuration/[[...path]]/route.ts": { path: "/.well-known/openid-configuration", anonymous: 404 },
  "app/register/route.ts": { path: "/register", anonymous: 404 },
};

const ROLES: Role[] = ["compliance", "reviewer", "admin"];
const RUN = "00000000-0000-4000-8000-0000000000aa";

/** A file's URL: route groups dropped, dynamic segments filled with a run id or a file name. */
function urlOf(file: string): string {
  const path = file
    .replace(/^app/, "")
    .replace(/\/(page\.tsx|route\.ts)$/, "")
    .replace(/\/\([^)]+\)/g, "")
    .replace(/\[\.\.\.name\]/g, "report.csv")
    .replace(/\[(id|runId)\]/g, RUN);
  return path === "" ? "/" : path;
}

type Entry = { file: string; url: string; kind: "page" | "route"; scope: Scope; methods: string[] };

function guardedEntries(): Entry[] {
  const files = [...globSync("app/**/page.tsx"), ...globSync("app/**/route.ts")].sort();
  const entries: Entry[] = [];
  const unclassified: string[] = [];
  for (const file of files) {
    if (SELF_GUARDED[file]) continue;
    const text = readFileSync(file, "utf8");
    const kind = file.endsWith("page.tsx") ? "page" : "route";
    const scopes = [...text.matchAll(/user(?:Page|Route)(?:<[^>]*>)?\(\s*"([a-z]+:[a-z]+)"/g)].map((m) => m[1] as Scope);
    const methods = kind === "page" ? ["GET"] : [...text.matchAll(/export (?:const|async function|function) (GET|POST|PUT|PATCH|DELETE)\b/g)].map((m) => m[1]!);
    if (scopes.length !== 1 || (kind === "route" && methods.length === 0)) {
      unclassified.push(file);
      continue;
    }
    entries.push({ file, url: urlOf(file), kind, scope: scopes[0]!, methods });
  }
  expect(unclassified, "pages and routes with neither one userPage/userRoute scope nor an entry in SELF_GUARDED").toEqual([]);
  return entries;
}

async function statusOf(request: APIRequestContext, method: string, url: string): Promise<{ status: number; location: string | null }> {
  const response = await request.fetch(url, {
    method,
    maxRedirects: 0,
    ...(method === "GET" ? {} : { data: {}, headers: { origin: new URL(url, "http://x").origin } }),
  });
  return { status: response.status(), location: response.headers()["location"] ?? null };
}

test("every page and route handler answers exactly the roles its scope allows", async ({ browser, baseURL, state, request }) => {
  const entries = guardedEntries();
  expect(entries.length).toBeGreaterThanOrEqual(15);
  const problems: string[] = [];

  for (const entry of entries) {
    for (const method of entry.methods) {
      const anonymous = await statusOf(request, method, `${baseURL}${entry.url}`);
      const sentToSignIn =
        entry.kind === "page" ? anonymous.status >= 300 && anonymous.status < 400 && /\/login/.test(anonymous.location ?? "") : anonymous.status === 401;
      if (!sentToSignIn) problems.push(`anonymous ${method} ${entry.url}: ${anonymous.status}`);
    }
  }
  // An agent's token is no console session: every page and route answers it as anonymous.
  const bearer = { Authorization: `Bearer ${state.credentials.agent.token}` };
  for (const entry of entries) {
    for (const method of entry.methods) {
      const response = await request.fetch(`${baseURL}${entry.url}`, {
        method,
        maxRedirects: 0,
        headers: { ...bearer, ...(method === "GET" ? {} : { origin: baseURL! }) },
        ...(method === "GET" ? {} : { data: {} }),
      });
      const status = response.status();
      const sentAway = entry.kind === "page" ? status >= 300 && status < 400 && /\/login/.test(response.headers()["location"] ?? "") : status === 401;
      if (!sentAway) problems.push(`agent token ${method} ${entry.url}: ${status}`);
    }
  }
  for (const [file, expected] of Object.entries(SELF_GUARDED)) {
    const { status } = await statusOf(request, "GET", `${baseURL}${expected.path}`);
    if (status !== expected.anonymous) problems.push(`anonymous GET ${expected.path} (${file}): ${status}, expected ${expected.anonymous}`);
  }

  for (const role of ROLES) {
    const user = state.credentials.users.find((u) => u.role === role)!;
    const context = await browser.newContext({ baseURL });
    const login = new LoginPage(await context.newPage());
    await login.goto();
    await login.signIn(user.email, user.password);
    await login.page.waitForURL((url) => url.pathname === "/");
    for (const entry of entries) {
      const allowed = (ROLE_SCOPES[role] as readonly Scope[]).includes(entry.scope);
      for (const method of entry.methods) {
        const { status, location } = await statusOf(context.request, method, `${baseURL}${entry.url}`);
        const through = status !== 401 && status !== 403 && !/\/login/.test(location ?? "") && status < 500;
        if (allowed && !through) problems.push(`${role} ${method} ${entry.url} (${entry.scope}): ${status}, expected through`);
        if (!allowed && status !== 403) problems.push(`${role} ${method} ${entry.url} (${entry.scope}): ${status}, expected 403`);
      }
    }
    await context.close();
  }
  expect(problems).toEqual([]);
});

test("each MCP tool answers exactly the agent tokens holding its scope", async ({ connectMcp, state }) => {
  const { MCP_TOOLS } = await import("../lib/mcp/tools");
  const db = createPrismaClient(state.databaseUrl);
  const system = { type: "system", name: "e2e" } as const;
  // Every tool's scope is one an agent token can hold.
  const scopes = [...new Set(MCP_TOOLS.map((tool) => tool.scope))] as (typeof DEFAULT_AGENT_SCOPES)[number][];
  const tokens: Record<string, string> = {};
  try {
    for (const scope of scopes) {
      const created = await db.$transaction((tx) =>
        createAgent(tx, system, { name: `matrix-${scope.replace(":", "-")}-${Date.now()}`, ownerEmail: "admin@airlock.local", scopes: [scope] }),
      );
      tokens[scope] = created.token;
    }
  } finally {
    await db.$disconnect();
  }
  const ARGS: Record<string, Record<string, unknown>> = {
    search_tools: { query: "invoices", detail: "name" },
    submit_run: { code: "return 1;", purpose: "matrix", language: "javascript" },
    call_tool: { server: "ledger", tool: "listInvoices", arguments: { limit: 1 } },
    // No such skill: a token allowed to call it gets BAD_REQUEST naming search_tools, not FORBIDDEN.
    run_skill: { name: "noSuchSkill", arguments: {} },
    get_run: { runId: RUN },
    cancel_run: { runId: RUN },
    list_inputs: {},
    record_outcome: { runId: RUN, action: "discarded" },
  };
  const problems: string[] = [];
  for (const scope of scopes) {
    const client = await connectMcp(tokens[scope]);
    for (const tool of MCP_TOOLS) {
      let text: string;
      let forbidden: boolean;
      try {
        const answer = (await client.callTool({ name: tool.name, arguments: ARGS[tool.name] })) as { content: { text: string }[]; isError?: boolean };
        text = answer.content[0]!.text;
        forbidden = answer.isError === true && /"code":"FORBIDDEN"/.test(text);
      } catch (error) {
        // A malformed request is a protocol error: the scope check let it through.
        if (!(error instanceof McpError) || error.code !== ErrorCode.InvalidParams) throw error;
        text = error.message;
        forbidden = false;
      }
      if (forbidden !== (tool.scope !== scope)) problems.push(`${tool.name} (${tool.scope}) with a ${scope} token: ${text.slice(0, 160)}`);
    }
  }
  expect(problems).toEqual([]);
});

const REFUSED = /"code":"(unauthorized|forbidden)"|"error":"(Sign in first\.|This needs the [a-z]+:[a-z]+ permission)/;

test("every server action answers exactly the roles its scope allows; an agent's token and no session are refused", async ({ browser, baseURL, state }) => {
  const actions = manifestActions();
  const unlisted = actions.filter((a) => !ACTIONS[a.name] && !OPEN_ACTIONS.has(`${a.file}#${a.name}`)).map((a) => `${a.file}#${a.name}`);
  expect(unlisted, "server actions with no entry in ACTIONS or OPEN_ACTIONS").toEqual([]);
  const guarded = actions.filter((a) => ACTIONS[a.name]);
  expect(guarded.map((a) => a.name).sort()).toEqual(Object.keys(ACTIONS).sort());
  for (const action of guarded)
    expect(readFileSync(action.file, "utf8"), `${action.name}'s source names its scope`).toContain(`"${ACTIONS[action.name]!.scope}"`);

  const problems: string[] = [];
  const callers: [string, Record<string, string>, readonly Scope[]][] = [
    ["anonymous", {}, []],
    ["agent token", { Authorization: `Bearer ${state.credentials.agent.token}` }, []],
  ];
  for (const role of ROLES) {
    const user = state.credentials.users.find((u) => u.role === role)!;
    callers.push([role, { Cookie: await sessionCookie(browser, baseURL!, user.email, user.password) }, ROLE_SCOPES[role]]);
  }
  for (const [caller, headers, scopes] of callers) {
    for (const action of guarded) {
      const entry = ACTIONS[action.name]!;
      const { status, text } = await callAction(baseURL!, action.id, entry, headers);
      const refused = REFUSED.test(text);
      const allowed = scopes.includes(entry.scope);
      if (status >= 500 || /"code":"internal"/.test(text)) problems.push(`${caller} ${action.name}: ${status} ${text.slice(0, 200)}`);
      else if (refused === allowed)
        problems.push(
          `${caller} ${action.name} (${entry.scope}): ${refused ? "refused" : "through"}, expected ${allowed ? "through" : "refused"}: ${text.slice(0, 200)}`,
        );
    }
  }
  expect(problems).toEqual([]);
});

test("owner-reviewer: a reviewer cannot decide a run of an agent they own; another reviewer can", async ({ browser, baseURL, state, connectMcp }) => {
  const reviewers = await createReviewers(state.databaseUrl, "matrix-owner", 2);
  const [ownerEmail, otherEmail] = reviewers.emails as [string, string];
  const db = createPrismaClient(state.databaseUrl);
  let token: string;
  try {
    token = (await db.$transaction((tx) => createAgent(tx, { type: "system", name: "e2e" }, { name: `matrix-owned-${Date.now()}`, ownerEmail }))).token;
  } finally {
    await db.$disconnect();
  }
  const client = await connectMcp(token);
  const submitted = (await client.callTool({
    name: "submit_run",
    arguments: { code: `// matrix ${Date.now()}\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_0004", message: "Hello" });`, purpose: "matrix" },
  })) as { content: { text: string }[] };
  const runId = (JSON.parse(submitted.content[0]!.text) as { runId: string }).runId;
  expect(await afterPreview(client, runId)).toBe("pending_review");

  const check = createPrismaClient(state.databaseUrl);
  const run = await check.run.findUniqueOrThrow({ where: { id: runId } });
  const fields = {
    runId,
    verdict: "reject",
    comment: "matrix: owner-reviewer",
    codeSha256: run.codeSha256,
    capabilitySet: JSON.stringify(run.capabilitySet),
    inputsDigest: run.inputsDigest,
    policyVersionId: run.policyVersionId ?? "",
    planDigest: (run.plan as { digest: string } | null)?.digest ?? "",
  };
  const decide = manifestActions().find((a) => a.name === "decideAction")!;
  const answers: Record<string, string> = {};
  for (const email of [ownerEmail, otherEmail]) {
    const cookie = await sessionCookie(browser, baseURL!, email, reviewers.password);
    answers[email] = (await callAction(baseURL!, decide.id, { page: `/runs/${runId}`, fields }, { Cookie: cookie })).text;
  }
  expect(answers[ownerEmail]).toMatch(/"code":"forbidden"/);
  expect(answers[otherEmail]).toMatch(/"ok":true/);
  expect((await check.run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("rejected");
  await check.$disconnect();
});
