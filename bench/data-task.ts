/**
 * `npm run bench:data` — a 200,000-row aggregation, printed as JSON: net paid amounts per currency
 * over a CSV dataset (about 4 MB), three ways, each over REPETITIONS after a warm-up:
 *
 * - airlock: submitted through the server (./endpoint.ts) as one run with the dataset as its
 *   input, end to end from `submit_run` to the result (policy allows it; the strict sandbox reads
 *   the CSV with `inputs.csv`); `sandboxMs` is the run's own wall clock inside the sandbox;
 * - quickjs: the same script in QuickJS-wasm in this process (`quickjs-emscripten`, the engine
 *   of Vercel's code mode), a fresh context each time, the CSV handed in as a string and parsed
 *   inside QuickJS by a split-based parser (simpler than the sandbox's quoted-field parser, so
 *   the comparison favours QuickJS).
 *
 * The answers must be equal. Target: airlock end to end ≤ 1.0 × quickjs.
 */
import { getQuickJS } from "quickjs-emscripten";
import { canonicalJson } from "@/lib/canonical-json";
import { startBenchEndpoint } from "./endpoint";

const ROWS = 200_000;
const REPETITIONS = 7;

const SCRIPT = `const rows = inputs.csv("sales.csv");
const net = {};
for (const r of rows) if (r.status === "paid") net[r.currency] = (net[r.currency] ?? 0) + Number(r.amountMinor);
return { rows: rows.length, net };`;

function salesCsv(): string {
  const currencies = ["EUR", "USD", "GBP", "CHF", "JPY"];
  const statuses = ["paid", "open", "void"];
  const lines = ["id,currency,status,amountMinor"];
  let a = 42;
  const next = () => (a = (Math.imul(a, 1_103_515_245) + 12_345) >>> 0);
  for (let i = 0; i < ROWS; i++) lines.push(`${i},${currencies[next() % 5]},${statuses[next() % 3]},${next() % 100_000}`);
  return `${lines.join("\n")}\n`;
}

function summarize(samples: number[]) {
  const sorted = [...samples].sort((x, y) => x - y);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { n: samples.length, p50: at(0.5), min: at(0), max: at(1) };
}

async function quickjs(csv: string): Promise<{ ms: number; answer: unknown }> {
  const QuickJS = await getQuickJS();
  const started = performance.now();
  const vm = QuickJS.newContext();
  try {
    const text = vm.newString(csv);
    vm.setProp(vm.global, "__csv", text);
    text.dispose();
    const program = `const inputs = { csv() { const [head, ...lines] = __csv.split("\\n"); const keys = head.split(","); const rows = []; for (const line of lines) { if (line === "") continue; const values = line.split(","); const row = {}; for (let i = 0; i < keys.length; i++) row[keys[i]] = values[i]; rows.push(row); } return rows; } };
JSON.stringify((() => { ${SCRIPT} })());`;
    const result = vm.unwrapResult(vm.evalCode(program));
    const answer = JSON.parse(vm.getString(result)) as unknown;
    result.dispose();
    return { ms: performance.now() - started, answer };
  } finally {
    vm.dispose();
  }
}

async function main() {
  const endpoint = await startBenchEndpoint({ AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: "100000000" });
  const csv = salesCsv();
  const { createDataset } = await import("@/lib/runs/datasets");
  await endpoint.db.$transaction((tx) =>
    createDataset(tx, { type: "system", name: "bench" }, { name: "sales.csv", dataClass: "internal", mediaType: "text/csv", content: csv }),
  );
  const airlock = async () => {
    const started = performance.now();
    const answer = (await endpoint.client.callTool({
      name: "submit_run",
      arguments: { code: SCRIPT, purpose: "Net paid amounts per currency over the sales export", language: "javascript", inputs: ["sales.csv"] },
    })) as unknown as { structuredContent: { status: string; result?: unknown; error?: unknown; stats?: { wallMs: number } } };
    const view = answer.structuredContent;
    if (view.status !== "succeeded") throw new Error(`the run ended ${view.status}: ${JSON.stringify(view.error)}`);
    return { ms: performance.now() - started, sandboxMs: view.stats!.wallMs, answer: view.result };
  };
  const first = await airlock();
  const reference = await quickjs(csv);
  if (canonicalJson(first.answer as never) !== canonicalJson(reference.answer as never)) {
    throw new Error(`the answers differ: airlock ${JSON.stringify(first.answer)}, quickjs ${JSON.stringify(reference.answer)}`);
  }
  const airlockMs: number[] = [];
  const sandboxMs: number[] = [];
  const quickjsMs: number[] = [];
  for (let i = 0; i < REPETITIONS; i++) {
    const a = await airlock();
    airlockMs.push(a.ms);
    sandboxMs.push(a.sandboxMs);
    quickjsMs.push((await quickjs(csv)).ms);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const q = summarize(quickjsMs);
  const e2e = summarize(airlockMs);
  const inSandbox = summarize(sandboxMs);
  console.log(
    JSON.stringify(
      {
        benchmark: "data",
        rows: ROWS,
        csvBytes: Buffer.byteLength(csv),
        node: process.version,
        airlockEndToEndMs: e2e,
        airlockSandboxMs: inSandbox,
        quickjsInProcessMs: q,
        ratioEndToEnd: Number((e2e.p50 / q.p50).toFixed(2)),
        ratioSandbox: Number((inSandbox.p50 / q.p50).toFixed(2)),
        targetRatio: 1,
        answer: first.answer,
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
