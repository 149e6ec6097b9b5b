/**
 * Property-based fuzzing of every console page and route handler (fast-check, fixed seed, bounded
 * runs) against `next start`, signed in as each role: hostile query strings (NUL, invalid UTF-8,
 * lone surrogates, bidi characters, huge and negative numbers, repeated keys, 10 KB values) and,
 * for POST routes, hostile JSON and non-JSON bodies. No answer may be a 5xx: malformed input is
 * a typed 4xx or a page that says what was wrong.
 */
import { globSync } from "node:fs";
import fc from "fast-check";
import { expect, test } from "./fixtures";
import { LoginPage } from "./pages/login-page";

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
