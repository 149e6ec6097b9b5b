/**
 * `npm run bench:tokens [-- --svg FILE]` — the token economy on a broad surface, printed as JSON:
 * 100 tools across 5 upstream MCP servers (./fixture: seeded, data heavy), and 12 tasks
 * (./fixture/tasks.ts), each done two ways with a fixed plan, whose answers must be equal:
 *
 * - direct calling: an SDK client on each upstream; the agent's context holds every upstream's
 *   `tools/list` JSON, every call's arguments and every result's text;
 * - Airlock code mode: the same upstreams behind Airlock (./endpoint.ts, one auto-approved run a
 *   task); the context holds Airlock's `tools/list` JSON, the `search_tools` text (detail full, for
 *   the tools the script calls), the `submit_run` arguments and the answer's text. Measured twice:
 *   `airlock` on a connection offering all eight tools, `airlockCodeMode` on one whose URL selects
 *   the three the plan uses (CODE_MODE_QUERY).
 *
 * Tokens are counted with o200k_base (gpt-tokenizer); `structuredContent` is not counted when the
 * text repeats it. Turns: one per tool call the model makes, plus its answer. Goals, for each
 * connection: at least 99% fewer tokens on the data-heavy tasks, and never more than direct on a
 * two-call task.
 * `--svg FILE` also writes the chart of docs/benchmarks.md from the same figures.
 */
import { writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { encode } from "gpt-tokenizer";
import { canonicalJson } from "@/lib/canonical-json";
import { CODE_MODE_QUERY, startBenchEndpoint } from "./endpoint";
import { fixtureUpstreams } from "./fixture/data";
import { TASKS, type Call, type Task } from "./fixture/tasks";

type CallAnswer = { content?: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean };
type Side = { tokens: number; turns: number; calls: number };

const tokens = (text: string) => encode(text).length;
const textOf = (answer: CallAnswer) => (answer.content ?? []).map((c) => c.text ?? "").join("");

function upstreamCommand(name: string): { command: string; args: string[] } {
  const tsx = createRequire(join(process.cwd(), "package.json")).resolve("tsx");
  return { command: process.execPath, args: ["--import", tsx, join(process.cwd(), "bench/fixture/server.ts"), name] };
}

async function direct(task: Task, clients: Map<string, Client>, toolsListTokens: number): Promise<Side & { answer: unknown }> {
  const side = { tokens: toolsListTokens, turns: 1, calls: 0 };
  const call: Call = async (server, tool, args) => {
    const answer = (await clients.get(server)!.callTool({ name: tool, arguments: args })) as CallAnswer;
    side.calls++;
    side.turns++;
    const text = textOf(answer);
    side.tokens += tokens(JSON.stringify(args)) + tokens(text);
    if (answer.isError) throw new Error(`${server}.${tool}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const answer = await task.direct(call);
  return { ...side, answer };
}

async function airlock(task: Task, client: Client, toolsListTokens: number): Promise<Side & { answer: unknown }> {
  const side = { tokens: toolsListTokens, turns: 1, calls: 0 };
  const found = (await client.callTool({ name: "search_tools", arguments: { query: task.tools.join(" "), detail: "full" } })) as CallAnswer;
  side.calls++;
  side.turns++;
  side.tokens += tokens(textOf(found));
  const args = { code: task.script, purpose: task.question, language: "javascript" };
  side.tokens += tokens(JSON.stringify(args));
  let answer = (await client.callTool({ name: "submit_run", arguments: args })) as CallAnswer;
  for (;;) {
    side.calls++;
    side.turns++;
    side.tokens += tokens(textOf(answer));
    const view = answer.structuredContent as { runId: string; status: string; result?: unknown; error?: unknown };
    if (view.status === "succeeded") return { ...side, answer: view.result };
    if (!["queued", "auto_approved", "running"].includes(view.status))
      throw new Error(`${task.name}: the run ended ${view.status}: ${JSON.stringify(view.error)}`);
    answer = (await client.callTool({ name: "get_run", arguments: { runId: view.runId, waitSeconds: 60 } })) as CallAnswer;
  }
}

type Figures = Side & { ratio: number; reductionPct: number };
type TaskFigures = { name: string; dataHeavy: boolean; direct: Side; airlock: Figures; airlockCodeMode: Figures };

function against(direct: Side, side: Side): Figures {
  const ratio = side.tokens / direct.tokens;
  return { ...side, ratio: Number(ratio.toFixed(4)), reductionPct: Number(((1 - ratio) * 100).toFixed(2)) };
}

function goals(figures: TaskFigures[], side: "airlock" | "airlockCodeMode") {
  const heavy = figures.filter((f) => f.dataHeavy);
  const light = figures.filter((f) => !f.dataHeavy);
  return {
    dataHeavyReductionPctMin: Math.min(...heavy.map((f) => f[side].reductionPct)),
    dataHeavyAtLeast99Pct: `${heavy.filter((f) => f[side].reductionPct >= 99).length} of ${heavy.length}`,
    twoCallNeverMoreThanDirect: light.every((f) => f[side].tokens <= f.direct.tokens),
  };
}

/** A horizontal bar chart on a log scale: each task's tokens, direct, through Airlock, and through its code-mode connection. */
function chart(rows: TaskFigures[]): string {
  const width = 760;
  const rowHeight = 46;
  const left = 190;
  const plot = width - left - 90;
  const max = Math.log10(Math.max(...rows.map((r) => r.direct.tokens)));
  const x = (n: number) => (Math.log10(Math.max(n, 1)) / max) * plot;
  const sides = [
    ["#9aa5b1", "direct MCP calls", (r: TaskFigures) => r.direct.tokens],
    ["#2f6fdf", "one Airlock run, 8 tools listed", (r: TaskFigures) => r.airlock.tokens],
    ["#0b8a5a", "the same, 3 tools selected", (r: TaskFigures) => r.airlockCodeMode.tokens],
  ] as const;
  const bars = rows.map((r, i) => {
    const y = 40 + i * rowHeight;
    return [
      `<text x="${left - 8}" y="${y + 20}" text-anchor="end">${r.name}</text>`,
      ...sides.map(([fill, , value], j) => {
        const n = value(r);
        return `<rect x="${left}" y="${y + j * 13}" width="${x(n).toFixed(1)}" height="11" fill="${fill}"/><text x="${(left + x(n) + 4).toFixed(1)}" y="${y + j * 13 + 9}">${n.toLocaleString("en-US")}</text>`;
      }),
    ].join("");
  });
  const height = 60 + rows.length * rowHeight;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<text x="${left}" y="16" font-size="13">Tokens in the agent's context per task (o200k, log scale)</text>`,
    ...sides.map(
      ([fill, label], j) => `<rect x="${left + j * 200}" y="24" width="10" height="8" fill="${fill}"/><text x="${left + j * 200 + 14}" y="32">${label}</text>`,
    ),
    ...bars,
    `</svg>`,
    "",
  ].join("\n");
}

async function main() {
  const { values } = parseArgs({ options: { svg: { type: "string" } }, strict: true });
  const upstreams = fixtureUpstreams();
  const configDir = await mkdtemp(join(tmpdir(), "airlock-bench-tokens-"));
  const configPath = join(configDir, "airlock.config.json");
  const servers = Object.fromEntries(upstreams.map((u) => [u.name, { transport: "stdio", ...upstreamCommand(u.name), dataClass: "internal" }]));
  writeFileSync(configPath, JSON.stringify({ servers }, null, 2));
  const endpoint = await startBenchEndpoint({ AIRLOCK_CONFIG: configPath });

  const clients = new Map<string, Client>();
  let directListTokens = 0;
  let toolCount = 0;
  for (const u of upstreams) {
    const client = new Client({ name: "bench-direct", version: "1" });
    await client.connect(new StdioClientTransport({ ...upstreamCommand(u.name), stderr: "ignore" }));
    const list = await client.listTools();
    toolCount += list.tools.length;
    directListTokens += tokens(JSON.stringify(list));
    clients.set(u.name, client);
  }
  const airlockListTokens = tokens(JSON.stringify(await endpoint.client.listTools()));
  const codeModeClient = await endpoint.connect(CODE_MODE_QUERY);
  const codeModeListTokens = tokens(JSON.stringify(await codeModeClient.listTools()));

  const figures: TaskFigures[] = [];
  for (const task of TASKS) {
    const d = await direct(task, clients, directListTokens);
    const a = await airlock(task, endpoint.client, airlockListTokens);
    const c = await airlock(task, codeModeClient, codeModeListTokens);
    for (const [side, answer] of [
      ["airlock", a.answer],
      ["airlockCodeMode", c.answer],
    ] as const) {
      if (canonicalJson(d.answer as never) !== canonicalJson(answer as never)) {
        throw new Error(`${task.name}: the answers differ: direct ${JSON.stringify(d.answer)}, ${side} ${JSON.stringify(answer)}`);
      }
    }
    const directSide = { tokens: d.tokens, turns: d.turns, calls: d.calls };
    figures.push({
      name: task.name,
      dataHeavy: task.dataHeavy,
      direct: directSide,
      airlock: against(directSide, { tokens: a.tokens, turns: a.turns, calls: a.calls }),
      airlockCodeMode: against(directSide, { tokens: c.tokens, turns: c.turns, calls: c.calls }),
    });
  }
  const out = {
    benchmark: "tokens",
    tokenizer: "o200k_base",
    node: process.version,
    upstreams: upstreams.length,
    tools: toolCount,
    toolsListTokens: { direct: directListTokens, airlock: airlockListTokens, airlockCodeMode: codeModeListTokens },
    codeModeQuery: CODE_MODE_QUERY,
    tasks: figures,
    goals: { airlock: goals(figures, "airlock"), airlockCodeMode: goals(figures, "airlockCodeMode") },
  };
  console.log(JSON.stringify(out, null, 2));
  if (values.svg) writeFileSync(values.svg, chart(figures));
  for (const client of clients.values()) await client.close();
  await endpoint.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
