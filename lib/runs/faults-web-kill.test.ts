/**
 * Fault: the web process is SIGKILLed (with its upstream and sandboxes) while agents' submissions
 * are in flight. A real process serves /api/mcp (lib/testing/web-process.ts: the route's handler
 * and the in-process executor, as `npm start` runs them); an agent submits six scripts over real
 * MCP (the SDK's Client, Streamable HTTP), each with its own idempotencyKey and one reminder email
 * to send. The process is killed once some runs are stored and one is executing, with submissions
 * still unanswered; it is started again and the agent retries every key with the same body.
 * Proves: no proposal is lost (each key has exactly one run, the one a submit returned before the
 * kill, if any); no run executes twice (each key's email is in the ledger's durable outbox at most
 * once, exactly once for a run that succeeded); every run ends in a terminal state with its audit
 * events (through the restarted process and the recovery sweep); the audit chain verifies.
 */
import { mkdtemp } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { quickAddJob } from "graphile-worker";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { quietQueueLogger } from "@/lib/db/queue-logger";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import {
  auditVerifies,
  ledgerEffects,
  seedFaultDatabase,
  spawnAirlock,
  TERMINAL,
  waitFor,
  writeFaultConfig,
  type AirlockProcess,
  type FaultConfig,
} from "@/lib/testing/faults";
import { EXECUTE_RUN, runMaintenance } from "./queue";

const MARK = `web-${Date.now().toString(36)}`;
const KEYS = Array.from({ length: 6 }, (_, i) => `${MARK}-k${i}`);
let db: TestDatabase;
let token: string;
let agentId: string;
let config: FaultConfig;
let dataDir: string;
let port: number;
const processes: AirlockProcess[] = [];
const clients: Client[] = [];

type View = { runId: string; status: string; error?: { code: string } };

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port: free } = server.address() as AddressInfo;
      server.close(() => resolve(free));
    });
  });
}

function startWeb(): AirlockProcess {
  const web = spawnAirlock(
    "lib/testing/web-process.ts",
    {
      DATABASE_URL: db.url,
      AIRLOCK_CONFIG: config.configFile,
      AIRLOCK_DATA_DIR: dataDir,
      AIRLOCK_IN_PROCESS_WORKER: "true",
      AIRLOCK_BUDGET_CONCURRENT_RUNS: "50",
      PORT: String(port),
    },
    "web ready on",
  );
  processes.push(web);
  return web;
}

async function connect(): Promise<Client> {
  const client = new Client({ name: "fault-agent", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/api/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  clients.push(client);
  return client;
}

/** Sends one reminder naming its key, then pauses: the submit waits for it (submit_run answers a quick run). */
const body = (key: string) => ({
  code: `const sent = await tools.ledger.sendReminderEmail({ invoiceId: "inv_0001", message: "${key}" });
await new Promise((r) => setTimeout(r, 1500));
return sent.reminderId;`,
  purpose: `one reminder (${key})`,
  idempotencyKey: key,
});

async function submit(client: Client, key: string): Promise<View> {
  const result = (await client.callTool({ name: "submit_run", arguments: body(key) })) as { content: { text: string }[] };
  // A run that ended failed is still an answer (isError, with the run's view); a refusal is not.
  const text = result.content[0]?.text ?? "";
  const view = (text.startsWith("{") ? JSON.parse(text) : null) as View | null;
  if (!view?.runId) throw new Error(`submit_run refused: ${text}`);
  return view;
}

const runsOf = () => db.prisma.run.findMany({ where: { agentId, idempotencyKey: { in: KEYS } } });
const effectsOf = (key: string) => ledgerEffects(config.stateFile, MARK).filter((message) => message === key);

beforeAll(async () => {
  db = await createTestDatabase();
  const seeded = await seedFaultDatabase(db.prisma);
  ({ token } = seeded);
  agentId = seeded.agent.id;
  dataDir = await mkdtemp(join(tmpdir(), "airlock-fault-web-"));
  config = await writeFaultConfig(dataDir, 2);
  port = await freePort();
}, 120_000);

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const web of processes.splice(0)) await web.kill();
});

afterAll(async () => {
  await db?.drop();
});

describe("the web process SIGKILLed mid-submit", () => {
  it("keeps one run per idempotencyKey, executes each once, and ends them all after a restart", async () => {
    const first = startWeb();
    await first.ready;
    const agent = await connect();

    const answers = new Map<string, View>();
    const refused = new Map<string, unknown>();
    const inFlight = KEYS.map((key) =>
      submit(agent, key).then(
        (view) => void answers.set(key, view),
        (error: unknown) => void refused.set(key, error),
      ),
    );
    // Some runs stored, one of them part-way through its script (its email sent, now pausing).
    await waitFor(
      "stored runs, one of them executing",
      async () => {
        const runs = await runsOf();
        const executing = runs.filter((r) => r.status === "running");
        const sent = await db.prisma.runToolCall.count({ where: { runId: { in: executing.map((r) => r.id) }, outcome: "ok" } });
        return runs.length >= 3 && sent >= 1;
      },
      60_000,
      25,
    );
    const unansweredAtKill = KEYS.filter((key) => !answers.has(key) && !refused.has(key));
    await first.kill();
    const storedAtKill = await runsOf();
    const writesAtKill = new Map<string, number>();
    /** Writes whose completion was on record at the kill: their effect had happened. */
    const completedAtKill = new Map<string, number>();
    for (const run of storedAtKill) {
      writesAtKill.set(run.id, await db.prisma.runToolCall.count({ where: { runId: run.id, readOnly: false } }));
      completedAtKill.set(run.id, await db.prisma.runToolCall.count({ where: { runId: run.id, readOnly: false, outcome: "ok" } }));
    }
    await Promise.all(inFlight);
    // The fault hit submissions in flight: some never got an answer, and the process died holding a run.
    expect(unansweredAtKill.length).toBeGreaterThan(0);
    for (const key of unansweredAtKill) expect(String(refused.get(key))).toMatch(/fetch failed/);
    expect(storedAtKill.some((r) => r.status === "running")).toBe(true);

    const second = startWeb();
    await second.ready;
    const retrying = await connect();
    // The agent retries every key at once, while the sweep (every minute in each executing process;
    // here with 3 s timings) ends or requeues the dead executor's runs and re-enqueues queued runs
    // whose job died with the process.
    const sweep = waitFor(
      "every run to end",
      async () => {
        await runMaintenance(
          db.prisma,
          {
            execute: (runId) =>
              quickAddJob({ connectionString: db.url, logger: quietQueueLogger }, EXECUTE_RUN, { runId }, { jobKey: `run:${runId}`, maxAttempts: 3 }).then(
                () => undefined,
              ),
            preview: async () => {},
          },
          { heartbeatTimeoutMs: 3000, requeueAfterMs: 3000 },
        );
        const runs = await runsOf();
        return runs.length === KEYS.length && runs.every((r) => TERMINAL.includes(r.status));
      },
      60_000,
      500,
    );
    const retried = new Map(await Promise.all(KEYS.map(async (key) => [key, await submit(retrying, key)] as const)));
    await sweep;

    // No proposal lost, none duplicated: one run per key, the very run a submit answered with.
    const runs = await runsOf();
    expect(runs).toHaveLength(KEYS.length);
    expect(new Set(runs.map((r) => r.idempotencyKey)).size).toBe(KEYS.length);
    for (const key of KEYS) {
      const run = runs.find((r) => r.idempotencyKey === key)!;
      expect(retried.get(key)!.runId).toBe(run.id);
      if (answers.has(key)) expect(answers.get(key)!.runId).toBe(run.id);
    }
    for (const stored of storedAtKill) expect(runs.map((r) => r.id)).toContain(stored.id);

    for (const run of await runsOf()) {
      const key = run.idempotencyKey!;
      const sent = effectsOf(key);
      const calls = await db.prisma.runToolCall.findMany({ where: { runId: run.id, readOnly: false } });
      // At most once, whatever happened; exactly once when it succeeded; a completed call had its effect.
      expect(sent.length, key).toBeLessThanOrEqual(1);
      expect(sent.length, key).toBeGreaterThanOrEqual(calls.filter((c) => c.outcome === "ok").length);
      if (run.status === "succeeded") expect(sent, key).toHaveLength(1);
      else expect(run, key).toMatchObject({ status: "failed", error: { code: "EXECUTOR_LOST" } });
      // Claimed once per attempt (a retry only when nothing could have had an effect), ended once.
      const events = (await db.prisma.auditEvent.findMany({ where: { subjectId: run.id }, orderBy: { id: "asc" } })).map((e) => e.action);
      expect(events.filter((a) => a === "run.submitted")).toHaveLength(1);
      expect(events.filter((a) => a === "run.running")).toHaveLength(run.attempt);
      expect(events.filter((a) => TERMINAL.map((s) => `run.${s}`).includes(a))).toEqual([`run.${run.status}`]);
    }
    // A run the process died executing is run again only if it had not started its call (attempt 2);
    // one whose email may have gone is not, and a person decides.
    const held = storedAtKill.filter((r) => r.status === "running");
    expect(held.filter((r) => (writesAtKill.get(r.id) ?? 0) > 0).length).toBeGreaterThan(0);
    for (const { id } of held) {
      const run = await db.prisma.run.findUniqueOrThrow({ where: { id } });
      const effects = effectsOf(run.idempotencyKey!);
      if ((writesAtKill.get(id) ?? 0) > 0) {
        expect(run).toMatchObject({ status: "failed", attempt: 1, error: { code: "EXECUTOR_LOST" } });
        // Its email went at most once: once if the call had completed, maybe not if it had only started.
        expect(effects.length).toBeLessThanOrEqual(1);
        if ((completedAtKill.get(id) ?? 0) > 0) expect(effects).toHaveLength(1);
      } else {
        expect(run).toMatchObject({ status: "succeeded", attempt: 2 });
        expect(effects).toHaveLength(1);
      }
    }

    expect(await auditVerifies(db.prisma)).toMatchObject({ ok: true, broken: null });
    expect(second.output()).not.toContain("unhandledRejection");
  }, 150_000);
});
