/**
 * Property-based fuzzing of every console page and route handler (fast-check, fixed seed, bounded
 * runs) against `next start`, signed in as each role: hostile query strings (NUL, invalid UTF-8,
 * lone surrogates, bidi characters, huge and negative numbers, repeated keys, 10 KB values) and,
 * for POST routes, hostile JSON and non-JSON bodies. No answer may be a 5xx: malformed input is
 * a typed 4xx or a page that says what was wrong.
 *
 * Every server action (the console's forms) the same way: each field of a form its schema accepts
 * replaced by hostile text (NUL, bidi and invisible characters, huge numbers, 100 KB values, deep
 * JSON), or its arguments replaced by deep nesting and values of the wrong kind. Each answer must
 * be a typed result (`ok` with data, or an error with its code), never `internal` or a 5xx.
 */
import { globSync } from "node:fs";
import fc from "fast-check";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { ACTIONS, callAction, manifestActions, sessionCookie } from "./server-actions";

const SEED = 20261202;
const RUNS_PER_ROUTE = 12;
const RUN = "00000000-0000-4000-8000-0000000000aa";
const ROLES = ["compliance", "reviewer", "admin"] as const;

/** Every page and route handler, as a URL with its dynamic segments filled, and its methods. */
function targets(): { url: string; methods: string[] }[] {
  const skip = /api\/(mcp|auth)\//;
  return [...globSync("app/**/page.tsx"), ...globSync("app/**/route.ts")]
    .filter((file) => !skip.test(file))
    .sort()
    .map((file) => {
      const path =
        file
          .replace(/^app/, "")
          .replace(/\/(page\.tsx|route\.ts)$/, "")
          .replace(/\/\([^)]+\)/g, "")
          .replace(/\[\.\.\.name\]/g, "report.csv")
          .replace(/\[(id|runId)\]/g, RUN) || "/";
      return { url: path, methods: file.includes("/decision/") ? ["POST"] : ["GET"] };
    });
}

const raw = fc.oneof(
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.constantFrom(
    "%00",
    "a%00b",
    "%ED%A0%80",
    "%FF%FE",
    "%C0%AF",
    "%E2%80%AE",
    "%E2%80%8B",
    "99999999999999999999999999",
    "-1",
    "1e309",
    "NaN",
    "0x10",
    "..%2F..%2Fetc%2Fpasswd",
    "%25",
    "%",
    "x".repeat(10_000),
    "2026-02-30",
    "9999-99-99T99:99:99Z",
    "0000-01-01",
    "0000-01-01T00:00:00Z",
  ),
);
const KEYS = ["q", "status", "agent", "decision", "from", "to", "since", "until", "after", "codeHash", "format", "person", "tool", "dataClass", "limit", "x"];
const query = fc.array(fc.tuple(fc.constantFrom(...KEYS), raw), { maxLength: 6 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("&"));
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.constantFrom(
    "",
    "{",
    "null",
    '{"verdict":"approve","seen":{"codeSha256":"\\u0000"}}',
    '{"verdict":"approve","comment":"' + "c".repeat(100_000) + '"}',
    "[".repeat(5_000),
  ),
);

test("no page or route handler answers hostile input with a 5xx, for any role", async ({ browser, baseURL, state }) => {
  test.setTimeout(300_000);
  const all = targets();
  expect(all.length).toBeGreaterThanOrEqual(15);
  const failures: string[] = [];
  for (const role of ROLES) {
    const user = state.credentials.users.find((u) => u.role === role)!;
    const context = await browser.newContext({ baseURL });
    const login = new LoginPage(await context.newPage());
    await login.goto();
    await login.signIn(user.email, user.password);
    await login.page.waitForURL((url) => url.pathname === "/");
    for (const target of all) {
      await fc.assert(
        fc.asyncProperty(query, body, async (q, data) => {
          for (const method of target.methods) {
            const response = await context.request.fetch(`${baseURL}${target.url}?${q}`, {
              method,
              maxRedirects: 0,
              ...(method === "POST" ? { data, headers: { "content-type": "application/json", origin: baseURL! } } : {}),
            });
            if (response.status() >= 500) failures.push(`${role} ${method} ${target.url}?${q.slice(0, 200)} → ${response.status()}`);
          }
        }),
        { seed: SEED, numRuns: RUNS_PER_ROUTE },
      );
    }
    await context.close();
  }
  expect(failures).toEqual([]);
});

test("no path answers a malformed escape or a hostile segment with a 5xx", async ({ browser, baseURL, state }) => {
  const segments = ["%E0%A4%A", "%ED%A0%80", "%", "%zz", "%00", "%2e%2e", "x".repeat(2_000)];
  const dynamic = targets().filter((target) => target.url.includes(RUN));
  expect(dynamic.length).toBeGreaterThanOrEqual(4);
  const urls = [
    ...dynamic.flatMap((target) => segments.map((segment) => target.url.replace(RUN, segment))),
    ...segments.flatMap((segment) => [`/api/auth/${segment}`, `/.well-known/oauth-authorization-server/${segment}`, `/${segment}`]),
  ];
  const admin = state.credentials.users.find((u) => u.role === "admin")!;
  const context = await browser.newContext({ baseURL });
  const login = new LoginPage(await context.newPage());
  await login.goto();
  await login.signIn(admin.email, admin.password);
  await login.page.waitForURL((url) => url.pathname === "/");
  const failures: string[] = [];
  for (const url of urls) {
    const response = await context.request.fetch(`${baseURL}${url}`, { maxRedirects: 0 });
    if (response.status() >= 500) failures.push(`${url.slice(0, 120)} → ${response.status()}`);
  }
  await context.close();
  expect(failures).toEqual([]);
});

const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    "\u0000",
    "a\u0000b",
    "\u202e\u2066evil\u2069",
    "\u200b\u200d\ufeff",
    "99999999999999999999999999",
    "-1",
    "1e309",
    "NaN",
    "c".repeat(100_000),
    "[".repeat(5_000),
    '{"__proto__":{"admin":true}}',
    "00000000-0000-4000-8000-0000000000aa\u0000",
  ),
);
const deep = (depth: number): unknown => (depth === 0 ? "x" : { a: deep(depth - 1) });
const wrongArgs = fc.constantFrom<unknown[]>([], ["x"], [null, "not a form"], [null, deep(200)], [null, [1, 2, 3]], [deep(200), null]);

test("no server action answers hostile form input untyped or with a 5xx, for any role", async ({ browser, baseURL, state }) => {
  test.setTimeout(300_000);
  const actions = manifestActions().filter((a) => ACTIONS[a.name]);
  expect(actions.length).toBe(Object.keys(ACTIONS).length);
  const failures: string[] = [];
  for (const role of ROLES) {
    const user = state.credentials.users.find((u) => u.role === role)!;
    const cookie = { Cookie: await sessionCookie(browser, baseURL!, user.email, user.password) };
    for (const action of actions) {
      const entry = ACTIONS[action.name]!;
      const names = Object.keys(entry.fields);
      const input = fc.oneof(
        fc.record({ field: names.length > 0 ? fc.constantFrom(...names) : fc.constant("extra"), value: hostileText }).map(({ field, value }) => ({
          fields: { ...entry.fields, [field]: value },
        })),
        wrongArgs.map((args) => ({ fields: entry.fields, args })),
      );
      await fc.assert(
        fc.asyncProperty(input, async ({ fields, args }: { fields: Record<string, string | string[]>; args?: unknown[] }) => {
          const { status, text } = await callAction(baseURL!, action.id, { page: entry.page, fields, previousOnly: entry.previousOnly, args }, cookie);
          const typed = /"ok":(true|false)/.test(text) || (entry.previousOnly === true && /"error":/.test(text));
          if (status >= 500 || /"code":"internal"/.test(text) || !typed) {
            failures.push(`${role} ${action.name} ${JSON.stringify({ fields, args }).slice(0, 160)} → ${status} ${text.slice(0, 160)}`);
          }
        }),
        { seed: SEED, numRuns: 8 },
      );
    }
  }
  expect(failures).toEqual([]);
});

test("every form refuses a field it does not have and a field sent twice, naming it, before anything is done", async ({ browser, baseURL, state }) => {
  const admin = state.credentials.users.find((u) => u.role === "admin")!;
  const cookie = { Cookie: await sessionCookie(browser, baseURL!, admin.email, admin.password) };
  const actions = manifestActions().filter((a) => ACTIONS[a.name] && Object.keys(ACTIONS[a.name]!.fields).length > 0);
  expect(actions.length).toBeGreaterThan(15);
  const misses: string[] = [];
  for (const action of actions) {
    const entry = ACTIONS[action.name]!;
    const extra = await callAction(baseURL!, action.id, { page: entry.page, fields: { ...entry.fields, unexpected: "1" } }, cookie);
    if (!/"code":"bad_request"/.test(extra.text) || !extra.text.includes('\\"unexpected\\" is not a field of this form')) {
      misses.push(`${action.name} with an unknown field → ${extra.status} ${extra.text.slice(0, 200)}`);
    }
    // A field that is not a list (checkboxes may repeat), sent twice with two different values.
    const [name, value] = Object.entries(entry.fields).find(([, v]) => typeof v === "string")!;
    const twice = await callAction(
      baseURL!,
      action.id,
      { page: entry.page, fields: { ...entry.fields, [name]: [value as string, `${value as string}2`] } },
      cookie,
    );
    if (!/"code":"bad_request"/.test(twice.text) || !twice.text.includes(`\\"${name}\\" is sent more than once`)) {
      misses.push(`${action.name} with ${name} twice → ${twice.status} ${twice.text.slice(0, 200)}`);
    }
  }
  expect(misses).toEqual([]);
});
