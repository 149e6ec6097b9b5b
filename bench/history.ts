/**
 * `npm run bench:history` — do intake and the console slow down as an agent's history grows?
 * Printed as JSON.
 *
 * The endpoint of ./endpoint.ts (its in-process worker executes each run), the demo agent, and
 * SUBMITS of one auto-approved one-line script (its analysis cached after the first), each timed
 * from `submit_run` to its answer with the result, THINK_MS apart off the clock: first with the
 * agent's runs so far (the baseline, in the same run), then after HISTORY old runs of that agent
 * are added (finished 30 days ago, copies of one of its runs with their search documents standing
 * built, inserted in SQL, then vacuumed and analyzed as autovacuum leaves old rows). Each step also
 * prints the plan of the budgets' statement shape (the WHERE of airlock_budget_figures, which
 * lib/intake/submit.ts budgetFigures calls), EXPLAIN ANALYZE: which scans it used, how long it took.
 *
 * Each step also times (p50 of CONSOLE_READS, after one untimed) the console's reads of the run
 * history: the runs list unfiltered and for the agent, the dashboard, the review queue and the
 * Patterns page (lib/review/runs-presenter.ts, lib/runs/dashboard.ts, lib/review/queue-presenter.ts,
 * lib/review/patterns.ts).
 *
 * Target: submit p50 with HISTORY old runs at most 1.2× the baseline's, a plan without a sequential
 * scan; each console read within 300 ms.
 */
import { startBenchEndpoint } from "./endpoint";

const SUBMITS = 25;
const HISTORY = [200_000];
/** Off the clock between submissions, as a model thinks between turns: the warm pool refills. */
const THINK_MS = 150;
const CONSOLE_READS = 5;

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { n: samples.length, p50: at(0.5), p95: at(0.95) };
}

async function main() {
  const endpoint = await startBenchEndpoint();
  // After the endpoint set the environment, as the app's modules expect.
  const { OPEN_RUN_STATUSES } = await import("@/lib/intake/submit");
  const { runsList } = await import("@/lib/review/runs-presenter");
  const { loadDashboard } = await import("@/lib/runs/dashboard");
  const { queueView } = await import("@/lib/review/queue-presenter");
  const { listPatterns } = await import("@/lib/review/patterns");
  const { client, db, agentName } = endpoint;
  const agent = await db.agent.findFirstOrThrow({ where: { name: agentName } });
  const admin = await db.user.findFirstOrThrow({ where: { role: "admin" } });
  const viewer = { type: "user", id: admin.id, email: admin.email, role: admin.role } as const;
  const reads: Record<string, () => Promise<unknown>> = {
    runsList: () => runsList(db, {}),
    runsListOfAgent: () => runsList(db, { agent: agentName }),
    dashboard: () => loadDashboard(db),
    reviewQueue: () => queueView(db, viewer),
    patterns: () => listPatterns(db, viewer),
  };
  const consoleMs = async () => {
    const p50: Record<string, number> = {};
    for (const [name, read] of Object.entries(reads)) {
      await read();
      const ms: number[] = [];
      for (let i = 0; i < CONSOLE_READS; i++) {
        const t = performance.now();
        await read();
        ms.push(performance.now() - t);
      }
      p50[name] = summarize(ms).p50;
    }
    return p50;
  };

  const submits = async () => {
    const ms: number[] = [];
    for (let i = 0; i < SUBMITS + 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, THINK_MS));
      const t = performance.now();
      const answer = await client.callTool({ name: "submit_run", arguments: { code: "return 42;", purpose: "bench:history" } });
      if (answer.isError || (answer.structuredContent as { status?: string }).status !== "succeeded") {
        throw new Error(`submit_run did not succeed: ${JSON.stringify(answer.content)}`);
      }
      if (i >= 2) ms.push(performance.now() - t);
    }
    return summarize(ms);
  };
  // The shape of airlock_budget_figures' WHERE (lib/intake/submit.ts budgetFigures), on this agent.
  const plan = async () => {
    const rows = await db.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(
      `EXPLAIN ANALYZE SELECT count(*) FROM "Run" WHERE "agentId" = $1::uuid AND ("createdAt" >= now() - interval '1 hour'
         OR status IN (${OPEN_RUN_STATUSES.map((status) => `'${status}'`).join(", ")})
         OR "finishedAt" >= now() - interval '1 day')`,
      agent.id,
    );
    const lines = rows.map((row) => row["QUERY PLAN"]);
    return {
      scans: lines.flatMap((line) => {
        const scan = /(Seq Scan|Index Only Scan|Index Scan|Bitmap Index Scan)(?: using "?(\w+)"?)? on "?(\w+)"?/.exec(line);
        return scan ? [`${scan[1]} ${scan[2] ?? scan[3]}`] : [];
      }),
      executionMs: Number(/Execution Time: ([\d.]+)/.exec(lines.join("\n"))?.[1]),
    };
  };

  type Step = { oldRuns: number; submitMs: ReturnType<typeof summarize>; budgetsPlan: Awaited<ReturnType<typeof plan>>; consoleMs: Record<string, number> };
  const steps: Step[] = [];
  steps.push({ oldRuns: 0, submitMs: await submits(), budgetsPlan: await plan(), consoleMs: await consoleMs() });
  console.error(new Date().toISOString(), "baseline done");
  const template = await db.run.findFirstOrThrow({ where: { agentId: agent.id }, select: { id: true } });
  const columns = (
    await db.$queryRawUnsafe<{ c: string }[]>(
      `SELECT string_agg(quote_ident(column_name), ', ') AS c FROM information_schema.columns
        WHERE table_name = 'Run' AND column_name NOT IN ('id', 'createdAt', 'finishedAt', 'status', 'idempotencyKey', 'execution')`,
    )
  )[0]!.c;
  let added = 0;
  for (const total of HISTORY) {
    // Old runs had their search documents built long ago: none is owed (an empty one stands in), or
    // the background pass would spend minutes building them during the measurement. Set in the
    // inserting transaction, so that pass never sees them owed.
    await db.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(
          `INSERT INTO "Run" (id, "createdAt", "finishedAt", status, execution, ${columns})
         SELECT gen_random_uuid(), now() - interval '30 days' - g * interval '1 second', now() - interval '30 days', 'succeeded',
                '{"cpuMs": 40, "wallMs": 5}'::jsonb, ${columns}
           FROM "Run" r, generate_series(1, $2::int) g WHERE r.id = $1::uuid`,
          template.id,
          total - added,
        );
        await tx.$executeRawUnsafe(
          `UPDATE "Run" SET "searchVector" = ''::tsvector WHERE "agentId" = $1::uuid AND "searchVector" IS NULL AND "finishedAt" < now() - interval '29 days'`,
          agent.id,
        );
      },
      { timeout: 300_000 },
    );
    added = total;
    await db.$executeRawUnsafe(`VACUUM ANALYZE "Run"`);
    console.error(new Date().toISOString(), `${total} old runs inserted`);
    steps.push({ oldRuns: total, submitMs: await submits(), budgetsPlan: await plan(), consoleMs: await consoleMs() });
    console.error(new Date().toISOString(), `submissions after ${total} done`);
  }
  const baseline = steps[0]!.submitMs.p50;
  const last = steps.at(-1)!;
  console.log(
    JSON.stringify(
      {
        benchmark: "history",
        node: process.version,
        steps,
        ratioP50AtMostHistory: Number((last.submitMs.p50 / baseline).toFixed(2)),
        targetRatio: 1.2,
        withoutSeqScan: steps.every((step) => !step.budgetsPlan.scans.some((scan) => scan.startsWith("Seq Scan"))),
        consoleSlowestMs: Math.max(...Object.values(last.consoleMs)),
        consoleTargetMs: 300,
      },
      null,
      2,
    ),
  );
  await endpoint.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
