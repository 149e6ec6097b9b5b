/**
 * `npm run bench:task` — the demo task done two ways, side by side in one run, printed as JSON:
 * net paid revenue minus succeeded refunds per currency, paging 500 rows at a time.
 *
 * - direct: an SDK client on the ledger's own MCP server (stdio, as the broker starts it) lists its
 *   tools, calls listInvoices page by page and listRefunds, and adds up in the agent;
 * - airlock: an SDK client on Airlock's MCP endpoint lists Airlock's tools, asks search_tools for
 *   the two tools' declarations and submits one script that does the same; policy auto-approves it
 *   and the in-process worker executes it in the sandbox (strict isolation, warm pool), and the
 *   answer is `submit_run`'s own (or get_run's when it was not done in time). Done twice: on a
 *   connection offering all eight tools, and on one whose URL selects the three the plan uses
 *   (CODE_MODE_QUERY), which lists fewer.
 *
 * Both sides are timed over the same plan as their tokens are counted: from the first request
 * (tools/list) to the answer, over REPETITIONS, each client connected beforehand. The JSON also
 * gives each request's p50 on its own (`phasesMs`, so they need not add up to the plan's p50), so
 * the run alone (submit_run to its answer) can be compared with earlier figures, which left
 * Airlock's tools/list and search_tools off its clock while direct's tools/list was on it.
 *
 * Tokens reach the agent's context as text and are counted after the clock stops (o200k_base;
 * tokenizing is the model provider's work, not the agent's machine's):
 * - direct: the upstream's `tools/list` JSON, every call's arguments and every result's text;
 * - airlock: Airlock's `tools/list` JSON, the `search_tools` text (detail full, the two tools), the
 *   `submit_run` arguments and the answer's text.
 * `structuredContent` is not counted when the text repeats it. Model turns are counted too: one per
 * tool call the model makes, plus its answer. Every repetition's answers are compared, so a wrong
 * Airlock result fails the benchmark instead of looking fast.
 *
 * The endpoint runs in this process (./endpoint.ts); Next's own routing is not included.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer";
import { CODE_MODE_QUERY, startBenchEndpoint } from "./endpoint";

const REPETITIONS = 7;
const WARMUP = 2;
/** A pause between repetitions, off the clock: a model takes seconds between turns, and work Airlock defers to idle time (refilling the warm pool) happens there. */
const THINK_MS = 500;

const SCRIPT = [
  `// Net paid revenue minus succeeded refunds, per currency, paging 500 rows at a time.`,
  `const net = {};`,
  `let cursor = undefined;`,
  `do {`,
  `  const page = await tools.ledger.listInvoices({ status: "paid", limit: 500, cursor });`,
  `  for (const i of page.invoices) net[i.currency] = (net[i.currency] ?? 0) + i.amountMinor;`,
  `  cursor = page.nextCursor ?? undefined;`,
  `} while (cursor);`,
  `cursor = undefined;`,
  `do {`,
  `  const page = await tools.ledger.listRefunds({ status: "succeeded", limit: 500, cursor });`,
  `  for (const r of page.refunds) net[r.currency] = (net[r.currency] ?? 0) - r.amountMinor;`,
  `  cursor = page.nextCursor ?? undefined;`,
  `} while (cursor);`,
  `return net;`,
].join("\n");

type Money = Record<string, number>;
type CallAnswer = { content?: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean };

function summarize(samples: readonly number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { n: samples.length, p50: at(0.5), min: at(0), max: at(1) };
}

function textOf(answer: CallAnswer): string {
  return (answer.content ?? []).map((c) => c.text ?? "").join("");
}

const tokens = (context: readonly string[]) => context.reduce((sum, text) => sum + encode(text).length, 0);

/**
 * What reached the agent's context, as text, counted (tokenized) after the clock stops as a model
 * provider would; and how long each request of the plan took, by name.
 */
type Seen = { net: Money; context: string[]; turns: number; phases: Record<string, number> };

/** The time `request` took, added to `phases[name]`. */
async function phase<T>(phases: Record<string, number>, name: string, request: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await request();
  } finally {
    phases[name] = (phases[name] ?? 0) + performance.now() - started;
  }
}

/** Direct calling: the agent lists the ledger's tools and pages through the ledger itself. */
async function direct(client: Client): Promise<Seen> {
  const phases: Record<string, number> = {};
  const context = [JSON.stringify(await phase(phases, "toolsList", () => client.listTools()))];
  let turns = 1; // the answer
  const net: Money = {};
  for (const [tool, key, sign, status] of [
    ["listInvoices", "invoices", 1, "paid"],
    ["listRefunds", "refunds", -1, "succeeded"],
  ] as const) {
    let cursor: string | undefined;
    do {
      const args = { status, limit: 500, ...(cursor ? { cursor } : {}) };
      const answer = (await phase(phases, "calls", () => client.callTool({ name: tool, arguments: args }))) as CallAnswer;
      turns++;
      const text = textOf(answer);
      context.push(JSON.stringify(args), text);
      const page = JSON.parse(text) as Record<string, { currency: string; amountMinor: number }[]> & { nextCursor: string | null };
      for (const row of page[key]!) net[row.currency] = (net[row.currency] ?? 0) + sign * row.amountMinor;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return { net, context, turns, phases };
}

/** One Airlock run: discovery, one submit, and get_run only when the submit's short wait ended first. */
async function airlock(client: Client): Promise<Seen> {
  const phases: Record<string, number> = {};
  const context = [JSON.stringify(await phase(phases, "toolsList", () => client.listTools()))];
  const found = (await phase(phases, "searchTools", () =>
    client.callTool({ name: "search_tools", arguments: { query: "listInvoices listRefunds", detail: "full" } }),
  )) as CallAnswer;
  context.push(textOf(found));
  let turns = 2; // search_tools and the answer
  // The same script each time, as an agent asked the same question again: each is a new run, executed
  // in full; its analysis comes from intake's cache after the first (lib/intake/analyze.ts).
  const args = { code: SCRIPT, purpose: "Net paid revenue minus succeeded refunds per currency" };
  context.push(JSON.stringify(args));
  let answer = (await phase(phases, "run", () => client.callTool({ name: "submit_run", arguments: args }))) as CallAnswer;
  turns++;
  for (;;) {
    const view = answer.structuredContent as { runId: string; status: string; result?: unknown; error?: unknown };
    context.push(textOf(answer));
    if (view.status === "succeeded") return { net: view.result as Money, context, turns, phases };
    if (!["queued", "auto_approved", "running"].includes(view.status)) throw new Error(`the run ended ${view.status}: ${JSON.stringify(view.error)}`);
    answer = (await phase(phases, "run", () => client.callTool({ name: "get_run", arguments: { runId: view.runId, waitSeconds: 30 } }))) as CallAnswer;
    turns++;
  }
}

/** The plan's machine time over the repetitions, and each request's own p50 (`phasesMs`). */
class Timings {
  private readonly totals: number[] = [];
  private readonly phases = new Map<string, number[]>();

  async time(plan: () => Promise<Seen>): Promise<Seen> {
    const started = performance.now();
    const seen = await plan();
    this.totals.push(performance.now() - started);
    for (const [name, ms] of Object.entries(seen.phases)) this.phases.set(name, [...(this.phases.get(name) ?? []), ms]);
    return seen;
  }

  get p50(): number {
    return summarize(this.totals).p50;
  }

  summary() {
    return { ...summarize(this.totals), phasesMs: Object.fromEntries([...this.phases].map(([name, ms]) => [name, summarize(ms).p50])) };
  }
}

async function main() {
  const endpoint = await startBenchEndpoint();
  const agentClient = endpoint.client;
  const { demoConfig } = await import("@/lib/runs/runtime");
  // The ledger as the broker starts it, on its own copy of the demo state.
  const ledger = demoConfig(join(endpoint.dataDir, "direct-ledger.json")).servers.ledger!;
  if (ledger.transport !== "stdio") throw new Error("the demo ledger is a stdio server");
  const directClient = new Client({ name: "bench-direct", version: "1" });
  await directClient.connect(new StdioClientTransport({ command: ledger.command, args: ledger.args, stderr: "ignore" }));

  const codeModeClient = await endpoint.connect(CODE_MODE_QUERY);
  const directRun = await direct(directClient);
  const airlockRun = await airlock(agentClient);
  const codeModeRun = await airlock(codeModeClient);
  const sorted = (net: Money) => JSON.stringify(Object.entries(net).sort(([a], [b]) => a.localeCompare(b)));
  const sameAnswer = (run: Seen) => {
    if (sorted(directRun.net) !== sorted(run.net))
      throw new Error(`the answers differ: direct ${JSON.stringify(directRun.net)}, other ${JSON.stringify(run.net)}`);
  };
  const timings = { direct: new Timings(), airlock: new Timings(), codeMode: new Timings() };
  const sides = [
    [timings.direct, () => direct(directClient)],
    [timings.airlock, () => airlock(agentClient)],
    [timings.codeMode, () => airlock(codeModeClient)],
  ] as const;
  for (let i = 0; i < WARMUP + REPETITIONS; i++) {
    // Alternating, so a machine that slows down slows every side; each after a pause.
    for (const [timing, plan] of sides) {
      await new Promise((resolve) => setTimeout(resolve, THINK_MS));
      sameAnswer(i < WARMUP ? await plan() : await timing.time(plan));
    }
  }
  [airlockRun, codeModeRun].forEach(sameAnswer);
  const ratio = (side: Timings) => Number((side.p50 / timings.direct.p50).toFixed(2));
  console.log(
    JSON.stringify(
      {
        benchmark: "task",
        task: "net paid revenue minus succeeded refunds per currency, 500 rows a page",
        node: process.version,
        repetitions: REPETITIONS,
        tokens: {
          tokenizer: "o200k_base",
          direct: tokens(directRun.context),
          airlock: tokens(airlockRun.context),
          ratio: Number((tokens(airlockRun.context) / tokens(directRun.context)).toFixed(3)),
          airlockCodeMode: tokens(codeModeRun.context),
          codeModeRatio: Number((tokens(codeModeRun.context) / tokens(directRun.context)).toFixed(3)),
          codeModeQuery: CODE_MODE_QUERY,
        },
        turns: { direct: directRun.turns, airlock: airlockRun.turns },
        machineMs: {
          direct: timings.direct.summary(),
          airlock: timings.airlock.summary(),
          airlockCodeMode: timings.codeMode.summary(),
          ratioP50: ratio(timings.airlock),
          codeModeRatioP50: ratio(timings.codeMode),
          targetRatio: 2,
        },
        answer: airlockRun.net,
      },
      null,
      2,
    ),
  );
  await directClient.close();
  await endpoint.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
