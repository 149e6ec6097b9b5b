/**
 * `npm run bench:cli` — `airlock audit verify` as an operator runs it, printed as one JSON object:
 * the wall clock of `node bin/airlock.mjs audit verify --json`, a fresh process each time, on a
 * throwaway PostgreSQL whose audit log holds EVENTS events (staged by recordAuditEvents and chained
 * by the sequencer, as a deployment's are). The command must answer `ok` over every event.
 *
 * Baselines in the same run, each a fresh process too: the pinned Node doing nothing
 * (`node -e 0`), and `airlock --help` (Node, tsx and the command line's modules, no database).
 * Target: verify ≤ 1 s.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordAuditEvents } from "@/lib/audit/record";
import { createPrismaClient } from "@/lib/db";
import { sequenceAudit } from "@/lib/db/audit-sequence";
import { applyMigrations } from "@/lib/db/migrate";
import { startPostgres } from "@/lib/db/postgres-server";

const EVENTS = 1_000;
const REPETITIONS = 7;
const SYSTEM = { type: "system", name: "bench" } as const;

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1));
  return { n: samples.length, p50: at(0.5), min: at(0), max: at(1) };
}

/** Runs the command to its exit; its wall clock in ms and its stdout. A non-zero exit is an error. */
function timed(args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve({ ms, stdout });
      else reject(new Error(`${args.join(" ")} exited ${code}: ${stderr.slice(0, 2_000)}`));
    });
  });
}

async function main() {
  const server = await startPostgres({ persistent: false });
  const dataDir = await mkdtemp(join(tmpdir(), "airlock-bench-cli-"));
  const db = createPrismaClient(server.url);
  try {
    await applyMigrations(server.url);
    for (let i = 0; i < EVENTS; i += 10) {
      await db.$transaction((tx) =>
        recordAuditEvents(
          tx,
          Array.from({ length: 10 }, (_, k) => ({ actor: SYSTEM, action: "bench.cli", subject: { type: "bench", id: String(i + k) }, data: { i: i + k } })),
        ),
      );
    }
    await sequenceAudit(db);
    const eventsSeeded = await db.auditEvent.count();

    const env = { ...process.env, DATABASE_URL: server.url, AIRLOCK_DATA_DIR: dataDir };
    const commands = {
      node: ["-e", "0"],
      help: ["bin/airlock.mjs", "--help"],
      verify: ["bin/airlock.mjs", "audit", "verify", "--json"],
    };
    const samples: Record<keyof typeof commands, number[]> = { node: [], help: [], verify: [] };
    let verdict: { ok?: unknown; eventsChecked?: unknown } = {};
    // Interleaved, so that a slow spell of the machine falls on all three; the first round warms
    // the file cache and is not counted.
    for (let round = 0; round <= REPETITIONS; round++) {
      for (const [name, args] of Object.entries(commands) as [keyof typeof commands, string[]][]) {
        const { ms, stdout } = await timed(args, env);
        if (name === "verify") verdict = JSON.parse(stdout) as typeof verdict;
        if (round > 0) samples[name].push(ms);
      }
    }
    if (verdict.ok !== true) throw new Error(`audit verify did not verify the log: ${JSON.stringify(verdict).slice(0, 500)}`);
    const verify = summarize(samples.verify);
    console.log(
      JSON.stringify(
        {
          benchmark: "cli",
          eventsSeeded,
          // Each verify is itself audited, so the last one checks a few more.
          eventsChecked: verdict.eventsChecked,
          wallMs: { verify, help: summarize(samples.help), node: summarize(samples.node) },
          targetMs: 1_000,
          met: verify.p50 <= 1_000,
        },
        null,
        2,
      ),
    );
  } finally {
    await db.$disconnect();
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
