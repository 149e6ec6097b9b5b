/**
 * `npm run bench:audit-page` — the audit search page as a compliance officer loads it, printed as
 * one JSON object. The built app (`npm run build` first) runs under `next start` on a throwaway
 * PostgreSQL holding BENCH_AUDIT_PAGE_RUNS runs of audit history (default 20,000 runs, about
 * 200,000 events, bench/audit-seed.ts), as the unprivileged app role; the officer signs in over
 * HTTP with a password. While the page is measured, four connections keep recording audit
 * events, as a busy deployment's runs do.
 *
 * Measured, p50/p95 over PAGE_SAMPLES loads of each: GET /audit for five searches (rare word,
 * common word, filters, code hash, time range), whole body read; in the same run, the baselines:
 * the same searches' query alone (searchRuns, in this process) and GET /login (a page with no data
 * behind it: the floor of a page here). Target: the page ≤ 300 ms.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { recordAudit } from "@/lib/audit/record";
import { filtersToSearchParams, type AuditFilters } from "@/lib/audit/filters";
import { searchRuns } from "@/lib/audit/search";
import { createUser } from "@/lib/auth/users";
import { createPrismaClient } from "@/lib/db";
import { startPostgres } from "@/lib/db/postgres-server";
import { prepareEmbeddedDatabase } from "@/lib/db/setup";
import { RARE_EVERY, rareWord, seedAuditBench } from "./audit-seed";
import { signIn } from "./console-session";

const RUNS = Number(process.env.BENCH_AUDIT_PAGE_RUNS ?? 20_000);
const PAGE_SAMPLES = 20;
const PORT = 3190;
const BASE = `http://127.0.0.1:${PORT}`;
const SYSTEM = { type: "system", name: "bench" } as const;

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1));
  return { p50: at(0.5), p95: at(0.95) };
}

async function timed(n: number, fn: (i: number) => Promise<unknown>) {
  await fn(0); // warm
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    samples.push(performance.now() - t);
  }
  return summarize(samples);
}

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const up = await fetch(url, { redirect: "manual" }).then(
      (res) => res.status < 500,
      () => false,
    );
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`next start did not answer at ${url} within ${timeoutMs} ms`);
}

async function main() {
  if (!existsSync(join(process.cwd(), ".next", "BUILD_ID"))) throw new Error("No build: run `npm run build` first.");
  const postgres = await startPostgres({ persistent: false });
  const client = new pg.Client({ connectionString: postgres.url });
  let server: ReturnType<typeof spawn> | undefined;
  let writing = true;
  try {
    const { appUrl } = await prepareEmbeddedDatabase(postgres);
    await client.connect();
    const seeded = await seedAuditBench(client, { runs: RUNS });
    await client.query("ANALYZE");
    const db = createPrismaClient(appUrl);
    const password = randomBytes(12).toString("base64url");
    await db.$transaction((tx) => createUser(tx, SYSTEM, { email: "carla@bench.local", role: "compliance", password }));

    const nextBin = createRequire(import.meta.url).resolve("next/dist/bin/next");
    server = spawn(process.execPath, [nextBin, "start", "-p", String(PORT), "-H", "127.0.0.1"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        NODE_ENV: "production",
        DATABASE_URL: appUrl,
        AUTH_SECRET: randomBytes(32).toString("base64url"),
        AIRLOCK_DATA_DIR: await mkdtemp(join(tmpdir(), "airlock-bench-page-")),
      },
      stdio: ["ignore", "ignore", "inherit"],
      detached: true,
    });
    await waitForHttp(`${BASE}/login`, 60_000);
    const jar = await signIn(BASE, "carla@bench.local", password);

    // A busy deployment: runs keep recording events while the officer searches.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) {
        await db.$transaction((tx) => recordAudit(tx, { actor: SYSTEM, action: "bench.busy", subject: { type: "bench", id: `${w}-${i}` }, data: { i } }));
      }
    });

    const day = 86_400_000;
    const searches: Record<string, (i: number) => AuditFilters> = {
      rareWord: (i) => ({ q: rareWord(i % Math.max(1, Math.floor(RUNS / RARE_EVERY))) }),
      commonWord: (i) => ({ q: ["invoices", "overdue invoices", "customer", "refund"][i % 4] }),
      filters: (i) => ({ status: (["failed", "succeeded"] as const)[i % 2], decision: "allow", agent: `agent-${i % 50}` }),
      codeHash: () => ({ codeHash: seeded.sampleCodeHash }),
      timeRange: (i) => {
        const since = new Date(seeded.firstAt.getTime() + ((i * 7919 * 60_000) % Math.max(1, seeded.lastAt.getTime() - seeded.firstAt.getTime() - day)));
        return { since, until: new Date(since.getTime() + day) };
      },
    };
    const page: Record<string, { p50: number; p95: number }> = {};
    const query: Record<string, { p50: number; p95: number }> = {};
    for (const [name, filters] of Object.entries(searches)) {
      page[name] = await timed(PAGE_SAMPLES, async (i) => {
        const response = await fetch(`${BASE}/audit?${filtersToSearchParams(filters(i))}`, { headers: { cookie: jar.header() }, redirect: "manual" });
        const html = await response.text();
        if (response.status !== 200 || !html.includes("Audit log")) throw new Error(`GET /audit answered ${response.status}`);
      });
      query[name] = await timed(PAGE_SAMPLES, (i) => searchRuns(db, filters(i)));
    }
    const login = await timed(PAGE_SAMPLES, async () => (await fetch(`${BASE}/login`)).text());
    writing = false;
    await Promise.all(writers);
    const busyEvents = await db.auditEvent.count({ where: { action: "bench.busy" } });
    await db.$disconnect();

    const pageP50s = Object.values(page).map((s) => s.p50);
    console.log(
      JSON.stringify(
        {
          benchmark: "audit-page",
          machine: { cpus: cpus().length, node: process.version },
          log: { runs: seeded.runs, events: seeded.events },
          busyEventsRecordedMeanwhile: busyEvents,
          pageMs: page,
          baselineQueryAloneMs: query,
          baselineLoginPageMs: login,
          worstPageP50Ms: Math.max(...pageP50s),
          targetMs: 300,
        },
        null,
        2,
      ),
    );
  } finally {
    writing = false;
    if (server?.pid) process.kill(-server.pid, "SIGTERM");
    await client.end().catch(() => {});
    await postgres.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
