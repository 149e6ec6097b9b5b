/**
 * The README's quick start, for real: `npm start` (scripts/start.ts) with its own embedded
 * database in a fresh data directory prints working credentials, serves the console and the MCP
 * endpoint, logs each run's changes as JSON lines (its output is not a terminal), stops cleanly on SIGTERM (no PostgreSQL left behind), and a second start reuses the data.
 * Runs after the build, so start.ts finds it current and does not rebuild.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "./fixtures";

const root = join(import.meta.dirname, "..");

/** A port nothing listens on now: the kernel's pick for a throwaway listener (a random guess can collide). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function npmStart(dataDir: string, port: number) {
  // The embedded path: no DATABASE_URL, whatever the environment running the tests has.
  const env: NodeJS.ProcessEnv = { ...process.env, AIRLOCK_DATA_DIR: dataDir, PORT: String(port) };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ["--conditions=react-server", "--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let markReady: () => void = () => {};
  const started = new Promise<void>((resolve) => (markReady = resolve));
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes("Press Ctrl-C to stop.")) markReady();
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // Ready when start.ts prints its last line; an exit first, or 150 s of silence, is a failure.
  const ready = Promise.race([
    started,
    exited.then((code) => Promise.reject(new Error(`npm start exited (${code}) before it came up:\n${output}`))),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`npm start did not come up within 150 s:\n${output}`)), 150_000).unref()),
  ]);
  return { child, ready, exited, output: () => output };
}

function postgresProcessesFor(clusterDir: string): Promise<string> {
  return new Promise((resolve) => {
    const ps = spawn("ps", ["-eo", "args"]);
    let out = "";
    ps.stdout.on("data", (c: Buffer) => (out += c.toString()));
    ps.on("exit", () =>
      resolve(
        out
          .split("\n")
          .filter((line) => line.includes(clusterDir) && line.includes("postgres"))
          .join("\n"),
      ),
    );
  });
}

/** A stopped start's data, its cluster with it (which may live under /var/lib/airlock, outside the data directory). */
async function removeData(dataDir: string, clusterDir: string): Promise<void> {
  await Promise.all([rm(dataDir, { recursive: true, force: true }), rm(clusterDir, { recursive: true, force: true })]);
}

test("npm start with a data directory it cannot make says which setting, in one line, and exits 1", async () => {
  // A path under a regular file: mkdir fails with ENOTDIR.
  const start = npmStart("/etc/hostname/airlock", await freePort());
  // It never comes up: `ready` rejects, which is this test's point, not a failure.
  start.ready.catch(() => undefined);
  expect(await start.exited).toBe(1);
  expect(start.output()).toBe(
    "airlock: AIRLOCK_DATA_DIR=/etc/hostname/airlock cannot be used as the data directory: ENOTDIR: not a directory, mkdir '/etc/hostname/airlock'. Point it at a directory this user may create and write.\n",
  );
});

test("npm start: first start prints working credentials; SIGTERM stops everything; a second start reuses the data", async ({ request, connectMcp }) => {
  test.setTimeout(300_000);
  const dataDir = await mkdtemp(join(tmpdir(), "airlock-quickstart-"));
  const port = await freePort();

  const first = npmStart(dataDir, port);
  await first.ready;
  const banner = first.output();
  expect(banner).toContain(`Airlock is running at http://127.0.0.1:${port}`);
  expect(banner).toContain("Sandbox isolation: strict (bubblewrap, Node permission model, prlimit).");
  const token = /Agent token for demo-agent \(shown once\):\s+(alk_\S+)/.exec(banner)?.[1];
  const adminPassword = /admin\s+admin@airlock\.local\s+(\S+)/.exec(banner)?.[1];
  expect(token).toBeDefined();
  expect(adminPassword).toBeDefined();
  // Where the cluster lives (the data dir, or /var/lib/airlock/… when postgres cannot reach it).
  const clusterDir = /Starting the embedded PostgreSQL \(data in (\S+)\)/.exec(banner)![1]!;
  // The new log is signed at once (a start that never came up leaves a covered log, not one the job refuses).
  expect((await readdir(join(dataDir, "audit-checkpoints"))).filter((f) => f.endsWith(".json")).length).toBeGreaterThan(0);

  expect((await request.get(`http://127.0.0.1:${port}/login`)).status()).toBe(200);
  const client = await connectMcp(token!, `http://127.0.0.1:${port}`);
  expect((await client.listTools()).tools.map((t) => t.name)).toContain("submit_run");
  // The terminal shows every change of a run as it commits, and an escalation with its review link (lib/log.ts).
  const submitted = async (code: string) => {
    const result = await client.callTool({ name: "submit_run", arguments: { code, purpose: "start.spec" } });
    return (JSON.parse((result.content as { text: string }[])[0]!.text) as { runId: string }).runId;
  };
  const readId = await submitted("const page = await tools.ledger.listInvoices({ limit: 1 });\nreturn page.invoices.length;");
  const refund = { invoiceId: "inv_0001", amountMinor: 100, reason: "goodwill", idempotencyKey: "start-spec-refund" };
  const writeId = await submitted(`await tools.ledger.issueRefund(${JSON.stringify(refund)});`);
  const logged = () =>
    first
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.runId === readId || entry.runId === writeId)
      .map(({ event, runId, to, decision, reviewUrl }) => ({ event, run: runId === readId ? "read" : "write", to, decision, reviewUrl }));
  await expect.poll(logged, { timeout: 30_000 }).toEqual(
    expect.arrayContaining([
      { event: "run.status", run: "read", to: "auto_approved", decision: "allow", reviewUrl: undefined },
      { event: "run.status", run: "read", to: "succeeded", decision: undefined, reviewUrl: undefined },
      { event: "run.status", run: "write", to: "previewing", decision: "escalate", reviewUrl: undefined },
      { event: "run.escalated", run: "write", to: "pending_review", decision: undefined, reviewUrl: `http://127.0.0.1:${port}/runs/${writeId}` },
    ]),
  );
  // Once each: the process that made a change logs it, after its commit.
  expect(logged().filter((entry) => entry.run === "read" && entry.to === "succeeded")).toHaveLength(1);
  await client.close();

  expect(await postgresProcessesFor(clusterDir)).not.toBe(""); // the check below can see a leftover
  first.child.kill("SIGTERM");
  expect(await first.exited).toBe(0);
  expect(await postgresProcessesFor(clusterDir)).toBe("");

  const second = npmStart(dataDir, port);
  await second.ready;
  expect(second.output()).toContain("Demo logins and the agent token from the first start");
  expect(second.output()).not.toContain(adminPassword!);
  expect(await readFile(join(dataDir, "demo-credentials.txt"), "utf8")).toContain(token!);
  expect((await request.get(`http://127.0.0.1:${port}/login`)).status()).toBe(200);
  second.child.kill("SIGTERM");
  expect(await second.exited).toBe(0);
  expect(await postgresProcessesFor(clusterDir)).toBe("");
  await removeData(dataDir, clusterDir);
});

/** Whether `pid` is a live process (an exited one its new parent has not reaped yet is a zombie, not live). */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The pid of the web server npm start (`startPid`) runs: its child that is Next (`next-server` once it names itself). */
function webServerPid(startPid: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const ps = spawn("ps", ["-eo", "pid=,ppid=,args="]);
    let out = "";
    ps.stdout.on("data", (c: Buffer) => (out += c.toString()));
    ps.on("exit", () => {
      const rows = out.split("\n").map((l) => l.trim().split(/\s+/));
      const row = rows.find(([, ppid, ...args]) => Number(ppid) === startPid && args.join(" ").includes("next"));
      if (row) resolve(Number(row[0]));
      else reject(new Error(`npm start (${startPid}) runs no web server:\n${out}`));
    });
  });
}

test("a web server that dies stops npm start at once, database included; one whose npm start was killed stops itself; a start after npm start was killed stops the database it left and comes up", async () => {
  test.setTimeout(300_000);
  const dataDir = await mkdtemp(join(tmpdir(), "airlock-crash-"));
  const port = await freePort();

  const first = npmStart(dataDir, port);
  await first.ready;
  const clusterDir = /Starting the embedded PostgreSQL \(data in (\S+)\)/.exec(first.output())![1]!;
  process.kill(await webServerPid(first.child.pid!), "SIGKILL");
  // Nothing to drain: not the 45 s a live server gets to finish its runs.
  const code = await Promise.race([first.exited, new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 15_000))]);
  expect(code).not.toBe("hung");
  expect(code).not.toBe(0);
  expect(first.output()).toContain("the web server exited");
  expect(await postgresProcessesFor(clusterDir)).toBe("");

  // npm start killed outright (its web server's group too): its PostgreSQL is left running.
  const second = npmStart(dataDir, port);
  await second.ready;
  process.kill(-(await webServerPid(second.child.pid!)), "SIGKILL");
  second.child.kill("SIGKILL");
  await second.exited;
  expect(await postgresProcessesFor(clusterDir)).not.toBe("");

  // npm start alone killed outright: its web server notices and stops, instead of serving and
  // executing runs unwatched, and holding the port the next start needs.
  const orphaning = npmStart(dataDir, port);
  await orphaning.ready;
  const orphan = await webServerPid(orphaning.child.pid!);
  orphaning.child.kill("SIGKILL");
  await orphaning.exited;
  await expect.poll(() => isRunning(orphan), { timeout: 30_000 }).toBe(false);

  const third = npmStart(dataDir, port);
  await third.ready;
  expect(third.output()).toMatch(/Stopped the embedded PostgreSQL \(process \d+\) that an earlier start left running/);
  third.child.kill("SIGTERM");
  expect(await third.exited).toBe(0);
  expect(await postgresProcessesFor(clusterDir)).toBe("");
  await removeData(dataDir, clusterDir);
});
