/**
 * The authorization matrix, generated from the scope table (lib/contracts/scopes.ts ROLE_SCOPES)
 * and from the code itself: every console page and route handler is found on disk, its scope is
 * read from its `userPage("…")` / `userRoute("…")`, and each is requested as every role —
 * anonymous, compliance, reviewer, admin — against `next start`. Allowed roles must get through
 * (not 401/403, not a redirect to sign-in), every other role gets 403, anonymous gets sent to
 * sign-in (pages) or 401 (routes). A page or route with no recognized scope must be listed in
 * SELF_GUARDED with what it answers anyone; a new one that is neither fails this test.
 *
 * The agent door is crossed the same way: each MCP tool (its declared scope) is called by agent
 * tokens holding one scope each, and answers FORBIDDEN exactly when the token lacks the scope.
 * Server actions are not in this matrix yet (their ids exist only in the build's manifest).
 */
import { globSync, readFileSync } from "node:fs";
import type { APIRequestContext } from "@playwright/test";
import { createAgent } from "../lib/auth/agents";
import { DEFAULT_AGENT_SCOPES, ROLE_SCOPES, type Role, type Scope } from "../lib/contracts/scopes";
import { createPrismaClient } from "../lib/db";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";

/** Files that guard themselves (no console session) and what an anonymous GET must get. */
const SELF_GUARDED: Record<string, { path: string; anonymous: number }> = {
  "app/(auth)/login/page.tsx": { path: "/login", anonymous: 200 },
  "app/api/auth/[...nextauth]/route.ts": { path: "/api/auth/csrf", anonymous: 200 },
  "app/api/mcp/route.ts": { path: "/api/mcp", anonymous: 401 },
  "app/api/health/route.ts": { path: "/api/health", anonymous: 200 },
  "app/api/metrics/route.ts": { path: "/api/metrics", anonymous: 200 },
  "app/.well-known/oauth-protected-resource/route.ts": { path: "/.well-known/oauth-protected-resource", anonymous: 200 },
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
    get_run: { runId: RUN },
    cancel_run: { runId: RUN },
    list_inputs: {},
    record_outcome: { runId: RUN, action: "discarded" },
  };
  const problems: string[] = [];
  for (const scope of scopes) {
    const client = await connectMcp(tokens[scope]);
    for (const tool of MCP_TOOLS) {
      const answer = (await client.callTool({ name: tool.name, arguments: ARGS[tool.name] })) as { content: { text: string }[]; isError?: boolean };
      const forbidden = answer.isError === true && /"code":"FORBIDDEN"/.test(answer.content[0]!.text);
      if (forbidden !== (tool.scope !== scope)) problems.push(`${tool.name} (${tool.scope}) with a ${scope} token: ${answer.content[0]!.text.slice(0, 160)}`);
    }
  }
  expect(problems).toEqual([]);
});
