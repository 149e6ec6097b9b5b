/**
 * `npm run bench:tokens [-- --svg FILE]` — the token economy on a broad surface, printed as JSON:
 * 100 tools across 5 upstream MCP servers (./fixture: seeded, data heavy), and 12 tasks
 * (./fixture/tasks.ts), each done two ways with a fixed plan, whose answers must be equal:
 *
 * - direct calling: an SDK client on each upstream; the agent's context holds every upstream's
 *   `tools/list` JSON, every call's arguments and every result's text;
 * - Airlock code mode: the same upstreams behind Airlock (./endpoint.ts, one auto-approved run a
 *   task); the context holds Airlock's `tools/list` JSON, the `search_tools` text (detail full, for
 *   the tools the script calls), the `submit_run` arguments and the answer's text.
 *
 * Tokens are counted with o200k_base (gpt-tokenizer); `structuredContent` is not counted when the
 * text repeats it. Turns: one per tool call the model makes, plus its answer. Goals: at least 99%
 * fewer tokens on the data-heavy tasks, and never more than direct on a two-call task.
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
import { startBenchEndpoint } from "./endpoint";
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

type TaskFigures = { name: string; dataHeavy: boolean; direct: Side; airlock: Side; ratio: number; reductionPct: number };

/** A horizontal bar chart on a log scale: each task's tokens, direct and through Airlock. */
function chart(rows: TaskFigures[]): string {
  const width = 760;
  const rowHeight = 34;
  const left = 190;
  const plot = width - left - 90;
  const max = Math.log10(Math.max(...rows.map((r) => r.direct.tokens)));
  const x = (n: number) => (Math.log10(Math.max(n, 1)) / max) * plot;
  const bars = rows.map((r, i) => {
    const y = 40 + i * rowHeight;
    return [
      `<text x="${left - 8}" y="${y + 14}" text-anchor="end">${r.name}</text>`,
      `<rect x="${left}" y="${y}" width="${x(r.direct.tokens).toFixed(1)}" height="12" fill="#9aa5b1"/>`,
      `<text x="${(left + x(r.direct.tokens) + 4).toFixed(1)}" y="${y + 10}">${r.direct.tokens.toLocaleString("en-US")}</text>`,
      `<rect x="${left}" y="${y + 14}" width="${x(r.airlock.tokens).toFixed(1)}" height="12" fill="#2f6fdf"/>`,
      `<text x="${(left + x(r.airlock.tokens) + 4).toFixed(1)}" y="${y + 24}">${r.airlock.tokens.toLocaleString("en-US")}</text>`,
    ].join("");
  });
  const height = 60 + rows.length * rowHeight;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<text x="${left}" y="16" font-size="13">Tokens in the agent's context per task (o200k, log scale)</text>`,
    `<rect x="${left}" y="24" width="10" height="8" fill="#9aa5b1"/><text x="${left + 14}" y="32">direct MCP calls</text>`,
    `<rect x="${left + 130}" y="24" width="10" height="8" fill="#2f6fdf"/><text x="${left + 144}" y="32">one Airlock run</text>`,
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

  const figures: TaskFigures[] = [];
  for (const task of TASKS) {
    const d = await direct(task, clients, directListTokens);
    const a = await airlock(task, endpoint.client, airlockListTokens);
    if (canonicalJson(d.answer as never) !== canonicalJson(a.answer as never)) {
      throw new Error(`${task.name}: the answers differ: direct ${JSON.stringify(d.answer)}, airlock ${JSON.stringify(a.answer)}`);
    }
    const ratio = a.tokens / d.tokens;
    figures.push({
      name: task.name,
      dataHeavy: task.dataHeavy,
      direct: { tokens: d.tokens, turns: d.turns, calls: d.calls },
      airlock: { tokens: a.tokens, turns: a.turns, calls: a.calls },
      ratio: Number(ratio.toFixed(4)),
      reductionPct: Number(((1 - ratio) * 100).toFixed(2)),
    });
  }
  const heavy = figures.filter((f) => f.dataHeavy);
  const light = figures.filter((f) => !f.dataHeavy);
  const out = {
    benchmark: "tokens",
    tokenizer: "o200k_base",
    node: process.version,
    upstreams: upstreams.length,
    tools: toolCount,
    toolsListTokens: { direct: directListTokens, airlock: airlockListTokens },
    tasks: figures,
    goals: {
      dataHeavyReductionPctMin: Math.min(...heavy.map((f) => f.reductionPct)),
      dataHeavyAtLeast99Pct: heavy.every((f) => f.reductionPct >= 99),
      twoCallNeverMoreThanDirect: light.every((f) => f.airlock.tokens <= f.direct.tokens),
    },
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
