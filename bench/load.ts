/**
 * `npm run bench:load` — many agents and a compliance officer at once against a real server
 * process, printed as one JSON object.
 *
 * Setup: a throwaway PostgreSQL (migrated, with the unprivileged app role), and `scripts/start.ts`
 * as `npm start` runs it, in its own process, pointed at that database (DATABASE_URL, with the
 * owner as AIRLOCK_MIGRATION_DATABASE_URL): it seeds the demo (its upstream is the demo ledger),
 * builds the console when the build is missing or stale, and serves it with `next start`, which
 * executes runs in its in-process worker (strict isolation, the config's pool of 2). AGENTS agents
 * are created with lib/auth/agents.ts `createAgent`, each with its own token and its own MCP
 * client (the SDK over Streamable HTTP).
 *
 * Workload, for SECONDS: each agent loops, with THINK_MS between its requests, over a mix of
 * - a read-only run (`ledger.listInvoices`, internal data: auto-approved); submit_run waits up to
 *   its 10 s for the result, and a run not finished by then is polled later;
 * - a write (`ledger.sendReminderEmail`, pii: escalated, plan preview first); it stays pending
 *   (nobody reviews) and is cancelled at the end;
 * - a `get_run` long poll (waitSeconds 5) on one of its runs not finished or pending.
 * Meanwhile SEARCHERS sessions of the demo compliance user, signed in over HTTP with a password,
 * load the audit search page (`GET /audit?q=…`, whole body read) in a loop.
 *
 * Reported: p50/p95/p99 per operation (as the client timed it), and each read run from its stored
 * row to its end as the server recorded it, with the reads finished per second during the load;
 * HTTP answers by status class and by request (every request the clients sent, MCP and pages),
 * 5xx must be 0, and JSON-RPC errors (an internal error counts as a server error too); the cores
 * used during the load by the server's process tree, PostgreSQL, this process (the clients) and
 * other work on the machine (bench/cpu.ts); refusals by code, and BUDGET_EXCEEDED by the budget
 * named; lost runs: after a drain, every run a submit answered with a runId must exist for its
 * agent and be terminal (a read) or pending_review (a write), and runs the agents never heard of
 * are counted too; budgets per agent: the most runs in flight and pending that a monitor saw in
 * one snapshot (every 200 ms, one statement), and the runs stored per agent, against
 * AIRLOCK_BUDGET_CONCURRENT_RUNS, AIRLOCK_BUDGET_PENDING_REVIEWS and AIRLOCK_BUDGET_RUNS_PER_HOUR
 * as the server got them.
 *
 * Refuses: to start when the server does not print its banner within 15 minutes (a first build
 * included). Everything it starts (the server and its process group, PostgreSQL, temporary
 * folders) is stopped and removed on the way out, also on failure or Ctrl-C.
 *
 * Options: --seconds S (default 60), --agents N (50), --think-ms MS (250), --searchers N (2),
 * --budget-concurrent N (4), --budget-pending N (10), --budget-hour N (120); the budgets default
 * to the shipped ones.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { isTerminal, type RunStatus } from "@/lib/contracts/run-states";
import { freePort } from "@/lib/db/postgres-process";
import { startPostgres } from "@/lib/db/postgres-server";
import { prepareEmbeddedDatabase } from "@/lib/db/setup";
import { coresUsed, cpuSnapshot } from "./cpu";
import { signIn } from "./console-session";

const ROOT = resolve(import.meta.dirname, "..");
const SYSTEM = { type: "system", name: "bench-load" } as const;

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at > 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} must be a number`);
  return value;
}
const SECONDS = option("seconds", 60);
const AGENTS = option("agents", 50);
const THINK_MS = option("think-ms", 250);
const SEARCHERS = option("searchers", 2);
const BUDGETS = { concurrent: option("budget-concurrent", 4), pending: option("budget-pending", 10), perHour: option("budget-hour", 120) };
const POLL_WAIT_SECONDS = 5;
const MIX = { read: 0.45, write: 0.2 }; // the rest: get_run long polls

const log = (line: string) => process.stderr.write(`[load] ${line}\n`);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

function summarize(samples: number[]) {
  if (samples.length === 0) return { n: 0 };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1));
  return { n: samples.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: at(1) };
}

/** Every HTTP answer the clients got, by status class, and requests that got none. */
const http = { byClass: {} as Record<string, number>, byRequest: {} as Record<string, number>, noAnswer: 0, serverErrors: [] as string[] };
const countingFetch: typeof fetch = async (input, init) => {
  try {
    const response = await fetch(input, init);
    const bucket = `${Math.floor(response.status / 100)}xx`;
    http.byClass[bucket] = (http.byClass[bucket] ?? 0) + 1;
    const key = `${init?.method ?? "GET"} ${new URL(String(input)).pathname.replace(/^\/api\/auth\/.*/, "/api/auth/…")} ${response.status}`;
    http.byRequest[key] = (http.byRequest[key] ?? 0) + 1;
    if (response.status >= 500 && http.serverErrors.length < 20) http.serverErrors.push(`${response.status} ${String(input)}`);
    return response;
  } catch (error) {
    http.noAnswer++;
    throw error;
  }
};

const latency: Record<string, number[]> = {};
const record = (op: string, ms: number) => (latency[op] ??= []).push(ms);
const refusals: Record<string, number> = {};
const budgetRefusals: Record<string, number> = {};
const rpcErrors: Record<string, number> = {};
const count = (into: Record<string, number>, key: string) => (into[key] = (into[key] ?? 0) + 1);

function budgetNamed(message: string): string {
  if (/runs in the last hour/.test(message)) return "runsPerHour";
  if (/queued or running/.test(message)) return "concurrentRuns";
  if (/waiting for review/.test(message)) return "pendingReviews";
  if (/CPU-seconds/.test(message)) return "cpuSecondsPerDay";
  if (/failed or was refused/.test(message)) return "loopBreaker";
  return "other";
}

type Known = { runId: string; agent: number; kind: "read" | "write"; status: string };

/** An operator log line (lib/log.ts, JSON) at info or below: one per run change, not shown as progress. */
function isInfoLogLine(line: string): boolean {
  try {
    const parsed = JSON.parse(line) as { level?: unknown };
    return typeof parsed.level === "number" && parsed.level <= 30;
  } catch {
    return false;
  }
}

/** The server as `npm start` runs it; resolves once it printed its banner. */
function startServer(env: Record<string, string>, secrets: string[]): { child: ChildProcess; ready: Promise<void> } {
  const tsx = createRequire(join(ROOT, "package.json")).resolve("tsx");
  // setpriv: start.ts gets SIGTERM (and stops the server) if this process dies.
  const node = [process.execPath, "--conditions=react-server", "--disable-sigusr1", "--import", tsx, join(ROOT, "scripts", "start.ts")];
  const child = spawn("setpriv", ["--pdeathsig", "TERM", "--", ...node], {
    cwd: ROOT,
    env: env as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const show = (stream: string, text: string) => {
    for (const line of text.trimEnd().split("\n")) {
      if (line && !isInfoLogLine(line) && !secrets.some((s) => line.includes(s)) && !line.includes("alk_")) log(`server${stream}: ${line}`);
    }
  };
  const ready = new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error("the server did not print its banner within 15 minutes")), 15 * 60_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      show("", text);
      if (text.includes("Airlock is running at")) {
        clearTimeout(timer);
        resolveReady();
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => show(" (stderr)", chunk.toString()));
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code ?? signal}) before it was ready`));
    });
  });
  ready.catch(() => {});
  return { child, ready };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM"); // start.ts drains the server, then stops it and its group
  const timeout = sleep(90_000).then(() => "timeout" as const);
  if ((await Promise.race([exited.then(() => "exited" as const), timeout])) === "timeout") {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      /* gone */
    }
    await exited;
  }
}

async function main() {
  let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
  let server: ChildProcess | undefined;
  let dataDir: string | undefined;
  const clients: Client[] = [];
  let db: { $disconnect(): Promise<void> } | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      if (server) await stopServer(server).catch((error: unknown) => log(`stopping the server: ${String(error)}`));
      await db?.$disconnect().catch(() => {});
      await postgres?.stop().catch((error: unknown) => log(`stopping PostgreSQL: ${String(error)}`));
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    })());
  const onSignal = () => {
    log("interrupted; cleaning up");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    log("starting PostgreSQL");
    postgres = await startPostgres({ persistent: false });
    const { appUrl, ownerUrl } = await prepareEmbeddedDatabase(postgres);
    dataDir = await mkdtemp(join(tmpdir(), "airlock-load-"));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const demoPassword = randomBytes(12).toString("base64url");
    const authSecret = randomBytes(32).toString("base64url");
    const serverEnv: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      NODE_ENV: "production",
      DATABASE_URL: appUrl,
      AIRLOCK_MIGRATION_DATABASE_URL: ownerUrl,
      PORT: String(port),
      AIRLOCK_HOST: "127.0.0.1",
      AIRLOCK_DATA_DIR: dataDir,
      AIRLOCK_DEMO_PASSWORD: demoPassword,
      AUTH_SECRET: authSecret,
      AIRLOCK_BUDGET_CONCURRENT_RUNS: String(BUDGETS.concurrent),
      AIRLOCK_BUDGET_PENDING_REVIEWS: String(BUDGETS.pending),
      AIRLOCK_BUDGET_RUNS_PER_HOUR: String(BUDGETS.perHour),
    };
    log(`starting the server on ${base} (scripts/start.ts; it builds the console first when needed)`);
    const started = startServer(serverEnv, [demoPassword, authSecret]);
    server = started.child;
    await started.ready;

    const { createPrismaClient } = await import("@/lib/db");
    const prisma = createPrismaClient(appUrl);
    db = prisma;
    const { createAgent } = await import("@/lib/auth/agents");
    const agents: { id: string; token: string }[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const agent = await prisma.$transaction((tx) => createAgent(tx, SYSTEM, { name: `load-agent-${i}`, ownerEmail: "admin@airlock.local" }));
      agents.push({ id: agent.agentId, token: agent.token });
    }
    for (const agent of agents) {
      const client = new Client({ name: "bench-load", version: "1" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${agent.token}` } },
          fetch: countingFetch,
        }),
      );
      clients.push(client);
    }
    const jar = await signIn(base, "compliance@airlock.local", demoPassword, countingFetch);
    log(`${AGENTS} agents connected, the compliance user signed in; ${SECONDS} s of load`);

    // Budgets as the database shows them, one snapshot per statement.
    const maxSeen = new Map<string, { active: number; pending: number }>();
    let monitoring = true;
    const monitor = (async () => {
      while (monitoring) {
        const rows = await prisma.$queryRaw<{ agentId: string; active: number; pending: number }[]>`
          SELECT "agentId",
            count(*) FILTER (WHERE status IN ('auto_approved', 'approved', 'queued', 'running'))::int AS active,
            count(*) FILTER (WHERE status IN ('previewing', 'pending_review', 'pending_release'))::int AS pending
          FROM "Run" GROUP BY "agentId"`;
        for (const row of rows) {
          const seen = maxSeen.get(row.agentId) ?? { active: 0, pending: 0 };
          maxSeen.set(row.agentId, { active: Math.max(seen.active, row.active), pending: Math.max(seen.pending, row.pending) });
        }
        await sleep(200);
      }
    })();

    const known: Known[] = [];
    const end = performance.now() + SECONDS * 1000;
    const loadStartedAt = new Date();
    const cpuTrees = { server: [server.pid!], postgres: [postgres.pid] };
    const cpuFrom = await cpuSnapshot(cpuTrees);
    const text = (answer: unknown) => (answer as { content: { text: string }[] }).content[0]!.text;

    /** One MCP call, timed; a JSON-RPC error is counted and swallowed (null). */
    const call = async (op: string, client: Client, name: string, args: Record<string, unknown>) => {
      const t = performance.now();
      try {
        const answer = JSON.parse(text(await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }))) as {
          runId?: string;
          status?: string;
          error?: { code: string; message: string };
        };
        record(op, performance.now() - t);
        return answer;
      } catch (error) {
        record(op, performance.now() - t);
        count(rpcErrors, error instanceof McpError ? `${op}: ${error.code}` : `${op}: ${(error as Error).message.slice(0, 80)}`);
        return null;
      }
    };

    const submit = async (index: number, client: Client, kind: "read" | "write", i: number) => {
      const code =
        kind === "read"
          ? `// agent ${index % 10} read\nconst page = await tools.ledger.listInvoices({ status: ${JSON.stringify(i % 2 ? "open" : "paid")}, limit: ${(i % 10) + 1} });\nreturn page.invoices.length;`
          : `// agent ${index % 10} reminder\nawait tools.ledger.sendReminderEmail({ invoiceId: "inv_000${(i % 9) + 1}", message: "Please pay" });\nreturn 1;`;
      const answer = await call(kind === "read" ? "submitRead" : "submitWrite", client, "submit_run", { code, purpose: `load bench ${kind}` });
      if (!answer) return;
      if (answer.runId) {
        known.push({ runId: answer.runId, agent: index, kind, status: answer.status ?? "unknown" });
      } else if (answer.error) {
        count(refusals, answer.error.code);
        if (answer.error.code === "BUDGET_EXCEEDED") count(budgetRefusals, budgetNamed(answer.error.message));
      }
    };

    const poll = async (index: number, client: Client) => {
      const mine = known.filter(
        (k) => k.agent === index && (k.kind === "write" ? k.status === "previewing" || k.status === "pending_review" : !isTerminal(k.status as RunStatus)),
      );
      const target = mine.find((k) => k.kind === "read") ?? mine[Math.floor(Math.random() * mine.length)];
      if (!target) return false;
      const answer = await call(target.kind === "read" ? "getRunInProgress" : "getRunPendingReview", client, "get_run", {
        runId: target.runId,
        waitSeconds: POLL_WAIT_SECONDS,
      });
      if (answer?.status) target.status = answer.status;
      return true;
    };

    const agentLoops = clients.map(async (client, index) => {
      await sleep(Math.random() * THINK_MS); // not all in step
      for (let i = 0; performance.now() < end; i++) {
        const r = Math.random();
        if (r < MIX.read) await submit(index, client, "read", i);
        else if (r < MIX.read + MIX.write) await submit(index, client, "write", i);
        else if (!(await poll(index, client))) await submit(index, client, "read", i);
        await sleep(THINK_MS);
      }
    });
    const terms = ["listInvoices", "sendReminderEmail", "load-agent-1", "invoices", "reminder", "load bench"];
    const searchLoops = Array.from({ length: SEARCHERS }, async (_, s) => {
      for (let i = s; performance.now() < end; i += SEARCHERS) {
        const t = performance.now();
        const response = await countingFetch(`${base}/audit?q=${encodeURIComponent(terms[i % terms.length]!)}`, {
          headers: { cookie: jar.header() },
          redirect: "manual",
        });
        const html = await response.text();
        record("auditSearch", performance.now() - t);
        if (response.status !== 200 || !html.includes("Audit log")) count(rpcErrors, `auditSearch: HTTP ${response.status}`);
        await sleep(THINK_MS);
      }
    });
    const ticker = setInterval(() => log(`${Math.round((end - performance.now()) / 1000)} s left; ${known.length} runs submitted`), 10_000);
    await Promise.all([...agentLoops, ...searchLoops]);
    const loadEndedAt = new Date();
    const cpuTo = await cpuSnapshot(cpuTrees);
    const loadSeconds = (loadEndedAt.getTime() - loadStartedAt.getTime()) / 1000;
    clearInterval(ticker);
    log(`load over: ${known.length} runs submitted; draining (reads to their end, writes to pending_review)`);

    // Drain: every read terminal, no write still previewing.
    const drainStart = performance.now();
    const ids = known.map((k) => k.runId);
    let stored = await prisma.run.findMany({ where: { id: { in: ids } }, select: { id: true, agentId: true, status: true } });
    for (;;) {
      const byId = new Map(stored.map((row) => [row.id, row]));
      const open = known.filter((k) => {
        const status = byId.get(k.runId)?.status;
        return status !== undefined && (k.kind === "read" ? !isTerminal(status) : status === "previewing");
      });
      if (open.length === 0 || performance.now() - drainStart > 300_000) break;
      await sleep(1000);
      stored = await prisma.run.findMany({ where: { id: { in: ids } }, select: { id: true, agentId: true, status: true } });
    }
    const drainSeconds = Number(((performance.now() - drainStart) / 1000).toFixed(1));
    monitoring = false;
    await monitor;

    const byId = new Map(stored.map((row) => [row.id, row]));
    const statuses = { read: {} as Record<string, number>, write: {} as Record<string, number> };
    let lost = 0;
    for (const k of known) {
      const row = byId.get(k.runId);
      const ok = row !== undefined && row.agentId === agents[k.agent]!.id && (k.kind === "read" ? isTerminal(row.status) : row.status === "pending_review");
      if (!ok) lost++;
      count(statuses[k.kind], row?.status ?? "missing");
    }
    const agentIds = agents.map((a) => a.id);
    const unheardOf = await prisma.run.count({ where: { agentId: { in: agentIds }, id: { notIn: ids } } });
    const perAgent = await prisma.run.groupBy({ by: ["agentId"], where: { agentId: { in: agentIds } }, _count: true });
    // Reads from the stored run to its end, as the server recorded them (every read, not only those an agent saw end).
    const readRows = await prisma.run.findMany({
      where: { id: { in: known.filter((k) => k.kind === "read").map((k) => k.runId) } },
      select: { createdAt: true, finishedAt: true },
    });
    const readStoredToFinished = readRows.filter((row) => row.finishedAt).map((row) => row.finishedAt!.getTime() - row.createdAt.getTime());
    const readsFinishedInLoad = readRows.filter((row) => row.finishedAt && row.finishedAt >= loadStartedAt && row.finishedAt <= loadEndedAt).length;

    // The writes nobody reviewed: cancelled by their agents, as an agent gives up on a review.
    const pending = known.filter((k) => byId.get(k.runId)?.status === "pending_review");
    let cancelled = 0;
    for (const k of pending) {
      const answer = await call("cancelRun", clients[k.agent]!, "cancel_run", { runId: k.runId });
      if (answer?.status === "cancelled") cancelled++;
    }
    const stillOpen = await prisma.run.count({
      where: { agentId: { in: agentIds }, status: { in: ["previewing", "pending_review", "auto_approved", "queued", "running"] } },
    });

    const seen = [...maxSeen.values()];
    const maxActive = Math.max(0, ...seen.map((s) => s.active));
    const maxPending = Math.max(0, ...seen.map((s) => s.pending));
    const maxStored = Math.max(0, ...perAgent.map((g) => g._count));
    const serverErrors =
      (http.byClass["5xx"] ?? 0) +
      Object.entries(rpcErrors)
        .filter(([key]) => key.endsWith(": -32603"))
        .reduce((sum, [, n]) => sum + n, 0);

    console.log(
      JSON.stringify(
        {
          benchmark: "load",
          machine: { cpus: cpus().length, node: process.version },
          workload: {
            seconds: SECONDS,
            agents: AGENTS,
            thinkMs: THINK_MS,
            searchers: SEARCHERS,
            mix: { ...MIX, getRun: Number((1 - MIX.read - MIX.write).toFixed(2)) },
          },
          latencyMs: Object.fromEntries(Object.entries(latency).map(([op, samples]) => [op, summarize(samples)])),
          readRunStoredToFinishedMs: summarize(readStoredToFinished),
          readRunsFinishedPerSecondDuringLoad: Number((readsFinishedInLoad / loadSeconds).toFixed(2)),
          coresUsedDuringLoad: coresUsed(cpuFrom, cpuTo, loadSeconds, "clients"),
          http: { ...http, serverErrors: http.serverErrors },
          rpcErrors,
          serverErrors,
          runs: {
            acknowledged: known.length,
            reads: known.filter((k) => k.kind === "read").length,
            writes: known.filter((k) => k.kind === "write").length,
            statusesAfterDrain: statuses,
            drainSeconds,
            lost,
            unheardOf,
            pendingCancelled: cancelled,
            pendingAtEnd: pending.length,
            stillOpenAfterCancel: stillOpen,
          },
          refusals,
          budgetRefusals,
          budgets: {
            concurrentRuns: { budget: BUDGETS.concurrent, maxSeenPerAgent: maxActive, held: maxActive <= BUDGETS.concurrent },
            pendingReviews: { budget: BUDGETS.pending, maxSeenPerAgent: maxPending, held: maxPending <= BUDGETS.pending },
            runsPerHour: { budget: BUDGETS.perHour, maxStoredPerAgent: maxStored, held: maxStored <= BUDGETS.perHour },
          },
        },
        null,
        2,
      ),
    );
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
