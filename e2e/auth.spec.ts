import { expect, test } from "./fixtures";

const NAV_BY_ROLE = {
  admin: ["Dashboard", "Runs", "Policies", "Agents", "Tools"],
  reviewer: ["Dashboard", "Queue", "Runs", "Policies", "Tools"],
  compliance: ["Dashboard", "Runs", "Audit", "Policies"],
} as const;

const ALL = ["Dashboard", "Queue", "Runs", "Audit", "Policies", "Agents", "Tools"];

for (const [role, visible] of Object.entries(NAV_BY_ROLE)) {
  test(`${role} logs in and sees exactly its navigation`, async ({ page, loginAs }) => {
    await loginAs(role as keyof typeof NAV_BY_ROLE);
    await expect(page.getByTestId("current-role")).toHaveText(role);
    const nav = page.getByRole("navigation", { name: "Console" });
    for (const label of ALL) {
      const link = nav.getByRole("link", { name: label, exact: true });
      if ((visible as readonly string[]).includes(label)) await expect(link).toBeVisible();
      else await expect(link).toHaveCount(0);
    }
  });
}

test("admin sees the seeded agent on the Agents page", async ({ page, loginAs, state }) => {
  await loginAs("admin");
  await page.getByRole("link", { name: "Agents", exact: true }).click();
  const row = page.getByTestId(`agent-${state.credentials.agent.name}`);
  await expect(row).toContainText("admin@airlock.local");
  await expect(row).toContainText(state.credentials.agent.token.slice(0, 10));
  await expect(row).not.toContainText(state.credentials.agent.token);
});

test("a wrong password gets a clear error and no session", async ({ page, loginPage }) => {
  await loginPage.goto();
  await loginPage.signIn("reviewer@airlock.local", "definitely-not-the-password");
  await expect(loginPage.error).toHaveText("Wrong email or password.");
  await expect(page).toHaveURL(/\/login/);
  await page.goto("/runs");
  await expect(page).toHaveURL(/\/login/);
});

test("repeated failures make this browser's address wait, even against the right password", async ({ loginPage, state }) => {
  // The second reviewer is used by no other test here, so the delay does not spill over. The
  // server runs with AIRLOCK_LOGIN_MAX_FAILURES=3: the 3rd failure costs 1 s, the 4th 2 s, the 5th 4 s.
  const target = state.credentials.users.find((u) => u.email === "reviewer2@airlock.local")!;
  for (let i = 0; i < 5; i++) {
    // An attempt inside a delay is refused unchecked; retry until the server counts this failure.
    await expect
      .poll(
        async () => {
          await loginPage.goto();
          await loginPage.signIn(target.email, "wrong-password-" + i);
          return loginPage.error.textContent();
        },
        { timeout: 15_000 },
      )
      .toBe("Wrong email or password.");
  }
  await loginPage.goto();
  await loginPage.signIn(target.email, target.password);
  await expect(loginPage.error).toContainText("Too many failed attempts");
});

test("an anonymous visit to a console page lands on /login", async ({ page }) => {
  for (const path of ["/", "/queue", "/audit", "/agents"]) {
    await page.goto(path);
    await expect(page).toHaveURL(/\/login/);
  }
});

test("a compliance user is refused an admin page by the server", async ({ page, loginAs }) => {
  await loginAs("compliance");
  const response = await page.goto("/agents");
  expect(response?.status()).toBe(403);
  await expect(page.getByRole("heading", { name: "Not allowed" })).toBeVisible();
  await expect(page.getByText("demo-agent")).toHaveCount(0);
});

test("compliance verifies the audit chain and exports events including sign-ins", async ({ page, loginAs }) => {
  await loginAs("compliance");
  await page.getByRole("link", { name: "Audit", exact: true }).click();
  await page.getByRole("button", { name: "Verify now" }).click();
  await expect(page.getByTestId("audit-verification")).toContainText("Chain intact");

  const exported = await page.request.get("/api/audit/export?format=jsonl");
  expect(exported.status()).toBe(200);
  const lines = (await exported.text())
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(lines[0]).toHaveProperty("manifest.rowCount", lines.length - 1);
  const actions = lines.slice(1).map((event) => event.action);
  expect(actions).toEqual(expect.arrayContaining(["auth.login_succeeded", "auth.login_failed", "audit.verified"]));
});

test("a reviewer is refused the audit export by the server", async ({ page, loginAs }) => {
  await loginAs("reviewer");
  expect((await page.request.get("/api/audit/export?format=csv")).status()).toBe(403);
  expect((await page.goto("/audit"))?.status()).toBe(403);
});

test("an unknown page gets the 404 page", async ({ page }) => {
  const response = await page.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Page not found" })).toBeVisible();
});

test("a link to a run page survives sign-in: the person lands on the run, not the dashboard", async ({ page, loginPage, mcpClient, state }) => {
  const submitted = (await mcpClient.callTool({ name: "submit_run", arguments: { code: "return 7;", purpose: "a run to link to" } })) as {
    content: { text: string }[];
  };
  const { runId } = JSON.parse(submitted.content[0]!.text) as { runId: string };
  await page.goto(`/runs/${runId}`);
  await expect(page).toHaveURL(new RegExp(`/login\\?from=${encodeURIComponent(`/runs/${runId}`)}`));
  const reviewer = state.credentials.users.find((u) => u.email === "reviewer@airlock.local")!;
  await loginPage.signIn(reviewer.email, reviewer.password);
  await page.waitForURL(`**/runs/${runId}`);
  await expect(page.getByTestId("run-status")).toBeVisible();
});
