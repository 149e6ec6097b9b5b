/**
 * Reviewers of a spec's own (so no other spec's lockouts or votes can affect it), created directly
 * in the e2e database, and approving a run the way a person does: signed in, in their own browser
 * context, clicking Approve on the run page.
 */
import { randomBytes } from "node:crypto";
import type { Browser } from "@playwright/test";
import { createUser } from "../lib/auth/users";
import { createPrismaClient } from "../lib/db";
import { expect } from "./fixtures";
import { LoginPage } from "./pages/login-page";
import { RunPage } from "./pages/run-page";

export type Reviewers = { emails: string[]; password: string };

/** `count` reviewer accounts named `<tag>-<n>-<random>@airlock.local`, with one password. */
export async function createReviewers(databaseUrl: string, tag: string, count = 2): Promise<Reviewers> {
  const suffix = randomBytes(3).toString("hex");
  const reviewers = {
    emails: Array.from({ length: count }, (_, i) => `${tag}-${i + 1}-${suffix}@airlock.local`),
    password: `e2e-${randomBytes(12).toString("base64url")}`,
  };
  const db = createPrismaClient(databaseUrl);
  try {
    await db.$transaction(async (tx) => {
      for (const email of reviewers.emails)
        await createUser(tx, { type: "system", name: `e2e-${tag}` }, { email, role: "reviewer", password: reviewers.password });
    });
  } finally {
    await db.$disconnect();
  }
  return reviewers;
}

/** Every reviewer signs in and approves `runId` on its page; each waits for the page to confirm. */
export async function approveInBrowser(browser: Browser, baseURL: string, reviewers: Reviewers, runId: string): Promise<void> {
  for (const email of reviewers.emails) {
    const context = await browser.newContext({ baseURL });
    const page = await context.newPage();
    const login = new LoginPage(page);
    await login.goto();
    await login.signIn(email, reviewers.password);
    await page.waitForURL((url) => url.pathname === "/");
    const run = new RunPage(page);
    await run.goto(runId);
    await run.decide("Approve");
    await expect(run.result).toBeVisible();
    await context.close();
  }
}
