/**
 * `npm run bench:scale` — executor processes added one host at a time, printed as one JSON object.
 *
 * Setup: a throwaway PostgreSQL that listens on a Unix socket only (no TCP), migrated, with the
 * app role; an intake-only runtime in this process (it analyses, decides and enqueues, and never
 * executes); and N = 1, 2, then 4 `scripts/worker.ts` processes, each on a simulated host of its
 * own: `unshare --net --uts` as root (its own network namespace with only loopback, and its own
 * host name; no user namespace), reaching PostgreSQL over the socket, so the workers share nothing
 * but the database. Each worker gets `sandbox.poolSize` 1 (one slot) at strict isolation and the
 * upstream `scaledb` (bench/fixture/pg-upstream.ts, stdio, started by the worker's broker inside
 * its namespace), which records each call as a row in its own PostgreSQL database.
 *
 * Workload: each run makes 5 sequential calls of 200 ms (`scaledb.recordCall`, read-only, so the
 * shipped policy auto-approves it); submissions come from 4 agents in turn, closed loop, keeping
 * 2 runs per worker submitted and not finished. Per N: a warm-up (WARMUP_SECONDS, not counted),
 * then MEASURE_SECONDS in which runs finishing are counted (runs/second), then a drain.
 *
 * Measured per N: runs/second (runs reaching their terminal state inside the window / its length)
 * and submit → terminal p50/p95 (as the agent sees it, get_run's wait ending on the pushed change)
 * of the runs submitted in the window, and where the window's CPU went (the workers' process trees,
 * PostgreSQL, this process, other work on the machine: bench/cpu.ts), per run and in cores; the
 * baseline is N = 1 in the same run. Target: runs/second at N ≥ 0.8 · N × N = 1's. Checked over every run submitted (warm-up included): none lost (each
 * terminal and succeeded), none executed twice (each run's 5 calls appear exactly once in the
 * upstream's table, 5 in Airlock's RunToolCall), none retried; and the isolation each worker
 * printed at start and that each run ran at (its terminal audit event's layers).
 *
 * Refuses: to run unless root (unshare and the socket's permissions need it) with unshare, setpriv,
 * ip and the system PostgreSQL binaries present; a worker that does not print "ready" within
 * 180 s fails the benchmark. Everything it starts (workers, their namespaces, which end with their
 * processes, the upstreams, PostgreSQL, temporary folders) is stopped and removed on the way out,
 * also on failure or Ctrl-C; workers die with this process (parent-death signal).
 *
 * Options: --seconds S (measured window, default 20), --warmup S (default 5), --workers 1,2,4.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readlinkSync } from "node:fs";
import { appendFile, chmod, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { parseConfig, type AirlockConfig } from "@/lib/broker/config";
import { DEFAULT_AGENT_SCOPES } from "@/lib/contracts/scopes";
import type { AgentActor } from "@/lib/runs/service";
import { isTerminal, type RunStatus } from "@/lib/contracts/run-states";
import { chownToPostgres, isRoot, postmasterPid, runAsPostgres, signal, tail, waitForExit } from "@/lib/db/postgres-process";
import { setEnvForChildren } from "@/lib/env";
import { coresUsed, cpuSnapshot, cpuUsedMs, type CpuSnapshot } from "./cpu";
import { UPSTREAM_TABLE_SQL, CALL_MS } from "./fixture/pg-upstream";

const ROOT = resolve(import.meta.dirname, "..");
const CALLS_PER_RUN = 5;
const AGENTS = 4;
const IN_FLIGHT_PER_WORKER = 2;
const SYSTEM = { type: "system", name: "bench-scale" } as const;
const PG_PORT = 5432; // names the socket file only; nothing listens on TCP

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 && process.argv[at + 1] ? process.argv[at + 1]! : fallback;
}
const MEASURE_SECONDS = Number(option("seconds", "20"));
const WARMUP_SECONDS = Number(option("warmup", "5"));
const WORKER_COUNTS = option("workers", "1,2,4")
  .split(",")
  .map((n) => Number(n));

const log = (line: string) => process.stderr.write(`[scale] ${line}\n`);

function summarize(samples: number[]) {
  if (samples.length === 0) return { n: 0, p50: null, p95: null, max: null };
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1));
  return { n: samples.length, p50: at(0.5), p95: at(0.95), max: at(1) };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL on a Unix socket (lib/db/postgres-server.ts listens on TCP only, and the namespaces
// have no route to the host's loopback).

type SocketPostgres = { dir: string; pid: number; password: string; url(user: string, password: string, database: string): string; stop(): Promise<void> };

async function startSocketPostgres(): Promise<SocketPostgres> {
  const versions = (await readdir("/usr/lib/postgresql").catch(() => [] as string[])).map(Number).filter(Number.isInteger);
  const major = Math.max(...versions);
  const bin = join("/usr/lib/postgresql", String(major), "bin");
  if (!existsSync(join(bin, "pg_ctl"))) throw new Error("no system PostgreSQL binaries in /usr/lib/postgresql/*/bin");
  const dir = await mkdtemp(join(tmpdir(), "airlock-scale-pg-"));
  await chmod(dir, 0o711);
  const cluster = join(dir, "pgdata");
  const socket = join(dir, "socket");
  for (const sub of [cluster, socket]) {
    await mkdir(sub, { mode: 0o700 });
    await chownToPostgres(sub);
  }
  await chmod(socket, 0o755);
  const password = randomBytes(18).toString("hex");
  const pwFile = join(dir, "pwfile");
  await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  await chownToPostgres(pwFile);
  const init = await runAsPostgres(join(bin, "initdb"), [
    "-D",
    cluster,
    "-U",
    "postgres",
    "--auth=scram-sha-256",
    `--pwfile=${pwFile}`,
    "-E",
    "UTF8",
    "--locale=C",
    "--no-sync",
  ]);
  await rm(pwFile, { force: true });
  if (init.code !== 0) throw new Error(`initdb failed:\n${init.output}`);
  const settings = [
    "listen_addresses=''",
    `unix_socket_directories='${socket}'`,
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=300",
  ];
  await appendFile(join(cluster, "postgresql.conf"), `\n# bench/scale.ts\n${settings.join("\n")}\n`);
  const logFile = join(dir, "postgres.log");
  await appendFile(logFile, "");
  await chownToPostgres(logFile);
  const started = await runAsPostgres(join(bin, "pg_ctl"), ["start", "-D", cluster, "-l", logFile, "-w", "-t", "30", "-o", `-p ${PG_PORT}`]);
  if (started.code !== 0) {
    const why = `${started.output}\n${await tail(logFile)}`;
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start:\n${why}`);
  }
  const pid = (await postmasterPid(cluster))!;
  // Shuts the server down and deletes it if this process dies without stopping it (as postgres-server.ts does).
  const watchdog = spawn(
    "sh",
    [
      "-c",
      'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -QUIT "$2" 2>/dev/null; sleep 2; kill -KILL "$2" 2>/dev/null; rm -rf -- "$3"',
      "sh",
      String(process.pid),
      String(pid),
      dir,
    ],
    { detached: true, stdio: "ignore" },
  );
  watchdog.unref();
  let stopping: Promise<void> | undefined;
  return {
    dir,
    pid,
    password,
    url: (user, pass, database) => `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@localhost:${PG_PORT}/${database}?host=${socket}`,
    stop: () =>
      (stopping ??= (async () => {
        signal(pid, "SIGQUIT");
        if (!(await waitForExit(pid, 20_000))) signal(pid, "SIGKILL");
        await waitForExit(pid, 5_000);
        await rm(dir, { recursive: true, force: true });
        watchdog.kill();
      })()),
  };
}

// ---------------------------------------------------------------------------------------------
// Workers, each on a simulated host.

/** An operator log line (lib/log.ts, JSON) at info or below: one per run change, not shown as progress. */
function isInfoLogLine(line: string): boolean {
  try {
    const parsed = JSON.parse(line) as { level?: unknown };
    return typeof parsed.level === "number" && parsed.level <= 30;
  } catch {
    return false;
  }
}

type Worker = {
  index: number;
  host: string;
  child: ChildProcess;
  isolationLine: string | null;
  ready: Promise<void>;
  netns: string | null;
  exited: Promise<void>;
};

function startWorker(index: number, env: Record<string, string>): Worker {
  const host = `bench-host-${index}`;
  const tsx = createRequire(join(ROOT, "package.json")).resolve("tsx");
  // setpriv: the worker gets SIGTERM (and drains) if this process dies. unshare without a user
  // namespace: the worker is root on the host, in a network namespace with only loopback.
  const child = spawn(
    "setpriv",
    [
      "--pdeathsig",
      "TERM",
      "--",
      "unshare",
      "--net",
      "--uts",
      "--",
      "sh",
      "-c",
      `ip link set lo up && hostname ${host} && exec "$0" "$@"`,
      process.execPath,
      "--conditions=react-server",
      "--disable-sigusr1",
      "--import",
      tsx,
      join(ROOT, "scripts", "worker.ts"),
    ],
    { cwd: ROOT, env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] },
  );
  const worker: Worker = { index, host, child, isolationLine: null, ready: Promise.resolve(), netns: null, exited: Promise.resolve() };
  worker.exited = new Promise((done) => child.once("exit", () => done()));
  worker.ready = new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`worker ${host} did not get ready within 180 s`)), 180_000);
    let buffered = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        if (!isInfoLogLine(line)) log(`${host}: ${line}`);
        if (line.startsWith("Sandbox isolation:")) worker.isolationLine = line;
        if (/^airlock worker .* ready/.test(line)) {
          clearTimeout(timer);
          try {
            worker.netns = readlinkSync(`/proc/${child.pid}/ns/net`);
          } catch {
            worker.netns = null;
          }
          ready();
        }
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().trimEnd().split("\n")) log(`${host} (stderr): ${line}`);
    });
    child.once("exit", (code, sig) => {
      clearTimeout(timer);
      fail(new Error(`worker ${host} exited (${code ?? sig}) before it was ready`));
    });
  });
  worker.ready.catch(() => {});
  return worker;
}

async function stopWorker(worker: Worker): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill("SIGTERM");
  const timeout = new Promise<"timeout">((done) => setTimeout(() => done("timeout"), 60_000).unref());
  if ((await Promise.race([worker.exited.then(() => "exited" as const), timeout])) === "timeout") {
    worker.child.kill("SIGKILL");
    await worker.exited;
  }
}

// ---------------------------------------------------------------------------------------------

type Submitted = {
  tag: string;
  runId: string;
  agent: number;
  workers: number;
  phase: "warmup" | "measure";
  submittedAt: number;
  status?: RunStatus;
  endedAt?: number;
};

async function main() {
  if (!isRoot()) throw new Error("bench:scale needs root (unshare --net, the PostgreSQL socket's permissions)");
  for (const tool of ["/usr/bin/unshare", "/usr/bin/setpriv"]) if (!existsSync(tool)) throw new Error(`${tool} is missing (util-linux)`);

  const workers: Worker[] = [];
  let postgres: SocketPostgres | undefined;
  let runtime: { close(): Promise<void> } | undefined;
  let db: { $disconnect(): Promise<void> } | undefined;
  let upstreamDb: pg.Client | undefined;
  let tmp: string | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.all(workers.map((w) => stopWorker(w).catch((error: unknown) => log(`stopping ${w.host}: ${String(error)}`))));
      await runtime?.close().catch((error: unknown) => log(`closing the intake runtime: ${String(error)}`));
      await db?.$disconnect().catch(() => {});
      await upstreamDb?.end().catch(() => {});
      await postgres?.stop().catch((error: unknown) => log(`stopping PostgreSQL: ${String(error)}`));
      if (tmp) await rm(tmp, { recursive: true, force: true });
    })());
  const onSignal = () => {
    log("interrupted; cleaning up");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    log("starting PostgreSQL on a Unix socket");
    postgres = await startSocketPostgres();
    const ownerUrl = postgres.url("postgres", postgres.password, "postgres");
    tmp = await mkdtemp(join(tmpdir(), "airlock-scale-"));
    await chmod(tmp, 0o711);

    // The upstream's own database and role, and its table (created once, before any upstream starts).
    const upstreamPassword = randomBytes(12).toString("hex");
    const admin = new pg.Client({ connectionString: ownerUrl });
    await admin.connect();
    await admin.query(`CREATE ROLE bench_upstream LOGIN PASSWORD '${upstreamPassword}'`);
    await admin.query("CREATE DATABASE bench_upstream OWNER bench_upstream");
    await admin.end();
    const upstreamUrl = postgres.url("bench_upstream", upstreamPassword, "bench_upstream");
    upstreamDb = new pg.Client({ connectionString: upstreamUrl });
    upstreamDb.on("error", (error) => log(`upstream table connection: ${error.message}`));
    await upstreamDb.connect();
    await upstreamDb.query(UPSTREAM_TABLE_SQL);

    const { prepareEmbeddedDatabase } = await import("@/lib/db/setup");
    const { appUrl } = await prepareEmbeddedDatabase({ url: ownerUrl, dataDir: tmp });

    const configFile = join(tmp, "airlock.config.json");
    const rawConfig = {
      servers: {
        scaledb: {
          transport: "stdio",
          command: process.execPath,
          args: ["--import", createRequire(join(ROOT, "package.json")).resolve("tsx"), join(ROOT, "bench", "fixture", "pg-upstream.ts")],
          env: { BENCH_UPSTREAM_DATABASE_URL: upstreamUrl },
          cwd: ROOT,
          dataClass: "internal",
        },
      },
      sandbox: { isolation: "strict", poolSize: 1 },
    };
    await writeFile(configFile, JSON.stringify(rawConfig, null, 2), { mode: 0o600 });
    const config: AirlockConfig = parseConfig(rawConfig, configFile);

    // This process: intake only. Budgets out of the way (4 agents keep up to 8 runs in flight).
    const intakeDir = join(tmp, "intake");
    await mkdir(intakeDir, { mode: 0o700 });
    setEnvForChildren({
      DATABASE_URL: appUrl,
      AIRLOCK_CONFIG: configFile,
      AIRLOCK_DATA_DIR: intakeDir,
      AIRLOCK_IN_PROCESS_WORKER: "false",
      // This process's stdout is the benchmark's JSON: no operator log lines (lib/log.ts) there.
      AIRLOCK_LOG_LEVEL: "silent",
      AIRLOCK_BUDGET_RUNS_PER_HOUR: "1000000",
      AIRLOCK_BUDGET_CONCURRENT_RUNS: "10000",
      AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: "100000000",
    });
    const { createPrismaClient } = await import("@/lib/db");
    const prisma = createPrismaClient(appUrl);
    db = prisma;
    const { seedDemo } = await import("@/lib/demo/seed");
    await seedDemo(prisma, { password: randomBytes(12).toString("base64url"), config });
    const { createAgent } = await import("@/lib/auth/agents");
    const agents: AgentActor[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const created = await prisma.$transaction((tx) => createAgent(tx, SYSTEM, { name: `scale-agent-${i}`, ownerEmail: "admin@airlock.local" }));
      const row = await prisma.agent.findUniqueOrThrow({ where: { id: created.agentId } });
      agents.push({ type: "agent", id: row.id, name: row.name, ownerId: row.ownerId, scopes: DEFAULT_AGENT_SCOPES } as const);
    }
    const { createRuntime } = await import("@/lib/runs/runtime");
    const intake = await createRuntime(prisma, config, { databaseUrl: appUrl, execute: false });
    runtime = intake;
    const { submitRun } = await import("@/lib/intake/submit");
    const { getRun } = await import("@/lib/runs/service");

    const workerEnv = (index: number): Record<string, string> => ({
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      NODE_ENV: "production",
      DATABASE_URL: appUrl,
      AIRLOCK_CONFIG: configFile,
      AIRLOCK_DATA_DIR: join(tmp!, `worker-${index}`),
    });

    const runs: Submitted[] = [];
    let sequence = 0;
    const script = (tag: string) =>
      [
        `// scale bench run ${tag}`,
        `const tag = ${JSON.stringify(tag)};`,
        `for (let call = 1; call <= ${CALLS_PER_RUN}; call++) await tools.scaledb.recordCall({ tag, call });`,
        `return { tag, calls: ${CALLS_PER_RUN} };`,
      ].join("\n");

    /** One run, submit → terminal, as its agent sees it. */
    const oneRun = async (n: number, phase: Submitted["phase"]) => {
      const index = sequence++;
      const agent = agents[index % AGENTS]!;
      const tag = `n${n}-${index}-${randomBytes(3).toString("hex")}`;
      const submittedAt = performance.now();
      const view = await submitRun(intake, agent, { code: script(tag), purpose: `scale bench, ${n} workers` });
      const entry: Submitted = { tag, runId: view.runId, agent: index % AGENTS, workers: n, phase, submittedAt };
      runs.push(entry);
      if (view.status !== "queued") throw new Error(`run ${tag} was not auto-approved: ${view.status} ${JSON.stringify(view.reasons)}`);
      for (;;) {
        const now = await getRun(intake, agent, { runId: view.runId, waitSeconds: 30 });
        if (isTerminal(now.status as RunStatus)) {
          entry.status = now.status as RunStatus;
          entry.endedAt = performance.now();
          return;
        }
        if (performance.now() - submittedAt > 300_000) throw new Error(`run ${tag} is still ${now.status} after 300 s`);
      }
    };

    const phases: Record<string, unknown> = {};
    let baseline: number | null = null;
    for (const n of WORKER_COUNTS) {
      const adding = [];
      for (let i = workers.length; i < n; i++) {
        const dataDir = join(tmp, `worker-${i + 1}`);
        await mkdir(dataDir, { mode: 0o700 });
        const worker = startWorker(i + 1, workerEnv(i + 1));
        workers.push(worker);
        adding.push(worker.ready);
      }
      log(`${n} worker(s): waiting for ${adding.length} new one(s) to get ready`);
      await Promise.all(adding);
      const live = await prisma.executor.count({ where: { heartbeatAt: { gt: new Date(Date.now() - 30_000) } } });
      if (live !== n) throw new Error(`expected ${n} live executors, found ${live}`);

      // Closed loop: IN_FLIGHT_PER_WORKER · n runs submitted and not finished at any time.
      const start = performance.now();
      const windowStart = start + WARMUP_SECONDS * 1000;
      const windowEnd = windowStart + MEASURE_SECONDS * 1000;
      log(`${n} worker(s): ${WARMUP_SECONDS} s warm-up, then ${MEASURE_SECONDS} s measured`);
      const pids = workers.map((w) => w.child.pid!);
      const snapshots: Promise<CpuSnapshot>[] = [];
      const at = (when: number) => new Promise<void>((done) => setTimeout(done, Math.max(0, when - performance.now())));
      const sampling = (async () => {
        await at(windowStart);
        snapshots.push(cpuSnapshot({ workers: pids, postgres: [postgres!.pid] }));
        await at(windowEnd);
        snapshots.push(cpuSnapshot({ workers: pids, postgres: [postgres!.pid] }));
      })();
      const lanes = Array.from({ length: IN_FLIGHT_PER_WORKER * n }, async () => {
        while (performance.now() < windowEnd) await oneRun(n, performance.now() < windowStart ? "warmup" : "measure");
      });
      await Promise.all(lanes);
      await sampling;
      const [cpuFrom, cpuTo] = await Promise.all(snapshots);
      const mine = runs.filter((r) => r.workers === n);
      const finishedInWindow = mine.filter((r) => r.endedAt! >= windowStart && r.endedAt! < windowEnd).length;
      const runsPerSecond = Number((finishedInWindow / MEASURE_SECONDS).toFixed(3));
      baseline ??= runsPerSecond;
      const byExecutor = await prisma.run.groupBy({ by: ["executorId"], where: { id: { in: mine.map((r) => r.runId) } }, _count: true });
      phases[String(n)] = {
        runsSubmitted: mine.length,
        runsFinishedInWindow: finishedInWindow,
        runsPerSecond,
        speedup: Number((runsPerSecond / baseline).toFixed(2)),
        target: Number((0.8 * n).toFixed(2)),
        withinTarget: runsPerSecond >= 0.8 * n * baseline,
        submitToTerminalMs: summarize(mine.filter((r) => r.phase === "measure").map((r) => r.endedAt! - r.submittedAt)),
        runsByExecutor: Object.fromEntries(byExecutor.map((g) => [g.executorId ?? "none", g._count])),
        coresUsedInWindow: coresUsed(cpuFrom!, cpuTo!, MEASURE_SECONDS, "intake"),
        cpuMsPerRun: Object.fromEntries(
          Object.entries(cpuUsedMs(cpuFrom!, cpuTo!, "intake")).map(([who, ms]) => [who, finishedInWindow ? Math.round(ms / finishedInWindow) : null]),
        ),
      };
      log(`${n} worker(s): ${runsPerSecond} runs/s (${finishedInWindow} in ${MEASURE_SECONDS} s)`);
    }

    // Correctness over every run, warm-up included.
    const stored = await prisma.run.findMany({
      where: { id: { in: runs.map((r) => r.runId) } },
      select: { id: true, status: true, attempt: true, isolation: true, _count: { select: { toolCalls: true } } },
    });
    const byId = new Map(stored.map((row) => [row.id, row]));
    const { rows: callRows } = await upstreamDb.query<{ tag: string; calls: number; distinct: number; hosts: number }>(
      "SELECT tag, count(*)::int AS calls, count(DISTINCT call)::int AS distinct, count(DISTINCT host)::int AS hosts FROM upstream_call GROUP BY tag",
    );
    const { rows: perHost } = await upstreamDb.query<{ host: string; calls: number }>(
      "SELECT host, count(*)::int AS calls FROM upstream_call GROUP BY host ORDER BY host",
    );
    const upstream = new Map(callRows.map((row) => [row.tag, row]));
    const statuses: Record<string, number> = {};
    let lost = 0;
    let doubleExecutions = 0;
    let missingCalls = 0;
    let recordedMismatch = 0;
    for (const run of runs) {
      const row = byId.get(run.runId);
      const status = row?.status ?? "missing";
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== "succeeded") lost++;
      const calls = upstream.get(run.tag);
      if (calls && (calls.calls > CALLS_PER_RUN || calls.calls !== calls.distinct || calls.hosts > 1)) doubleExecutions++;
      if (status === "succeeded" && (calls?.distinct ?? 0) < CALLS_PER_RUN) missingCalls++;
      if (row && row._count.toolCalls !== CALLS_PER_RUN) recordedMismatch++;
    }
    const knownTags = new Set(runs.map((r) => r.tag));
    const strayTags = callRows.filter((row) => !knownTags.has(row.tag)).length;
    const retried = stored.filter((row) => row.attempt > 1).length;
    const isolationOfRuns: Record<string, number> = {};
    for (const row of stored) isolationOfRuns[row.isolation ?? "none"] = (isolationOfRuns[row.isolation ?? "none"] ?? 0) + 1;
    // The layers each run ran with, from its terminal audit event (chained by the sequencer shortly after commit).
    await new Promise((done) => setTimeout(done, 1500));
    const layerRows = await prisma.$queryRaw<{ layers: string; runs: number }[]>`
      SELECT (data->'isolation'->'layers')::text AS layers, count(*)::int AS runs FROM "AuditEvent"
      WHERE action = 'run.succeeded' AND "subjectId" = ANY(${stored.map((row) => row.id)}) GROUP BY 1`;

    console.log(
      JSON.stringify(
        {
          benchmark: "scale",
          machine: { cpus: cpus().length, node: process.version },
          workload: {
            callsPerRun: CALLS_PER_RUN,
            callMs: CALL_MS,
            slotsPerWorker: 1,
            inFlightPerWorker: IN_FLIGHT_PER_WORKER,
            agents: AGENTS,
            warmupSeconds: WARMUP_SECONDS,
            measureSeconds: MEASURE_SECONDS,
          },
          hosts: workers.map((w) => ({ host: w.host, netns: w.netns, isolation: w.isolationLine })),
          distinctNetworkNamespaces: new Set(workers.map((w) => w.netns)).size,
          baselineRunsPerSecondOneWorker: baseline,
          workers: phases,
          correctness: {
            runs: runs.length,
            statuses,
            lost,
            doubleExecutions,
            missingCalls,
            recordedCallsMismatch: recordedMismatch,
            strayUpstreamTags: strayTags,
            retried,
            upstreamCallsByHost: Object.fromEntries(perHost.map((row) => [row.host, row.calls])),
          },
          isolation: { ofRuns: isolationOfRuns, layersOfRuns: layerRows.map((row) => ({ runs: row.runs, layers: JSON.parse(row.layers) as unknown })) },
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
