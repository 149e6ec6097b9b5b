/**
 * Benchmark of Airlock's judgment path: prints one JSON object.
 *
 * - decision: `buildPolicyRequest` + `decide` against the shipped default policies, over a mix
 *   of requests that reach every outcome (allow, escalate 1 and 2, deny), in microseconds. Each
 *   measured request names another agent, so each is decided by Cedar, not answered from the
 *   decisions `decide` remembers; `remembered` is the mix again, answered from them;
 * - analysis: `analyzeScript` on a typical 30-line TypeScript script, in milliseconds; the first
 *   (cold) call, which parses TypeScript's lib .d.ts, is reported on its own. Each measured call
 *   gets the script with a different last comment, so each is analysed, not answered from intake's
 *   cache; `cached` is the same script again, answered from the cache.
 *
 * Pure CPU, no I/O beyond reading the default policy file and TypeScript's libs.
 */
import { cpus } from "node:os";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import ts from "typescript";
import { analyzeScript } from "@/lib/intake/analyze";
import type { ToolFacts } from "@/lib/contracts/tools";
import { decide } from "@/lib/policy/decide";
import { defaultPolicyText, preparePolicySet } from "@/lib/policy/policy-set";
import { buildPolicyRequest, type PolicyRequestInput } from "@/lib/policy/request";

const DECISIONS = 20_000;
const ANALYSES = 200;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summarize(samples: number[], digits: number) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (n: number) => Number(n.toFixed(digits));
  return {
    p50: round(quantile(sorted, 0.5)),
    p95: round(quantile(sorted, 0.95)),
    p99: round(quantile(sorted, 0.99)),
    max: round(sorted[sorted.length - 1]!),
  };
}

const TOOLS: ToolFacts[] = [
  { server: "ledger", name: "listInvoices", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "internal", quarantined: false },
  { server: "ledger", name: "getCustomer", annotations: { readOnlyHint: true, openWorldHint: false }, dataClass: "internal", quarantined: false },
  {
    server: "ledger",
    name: "addNote",
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    dataClass: "internal",
    quarantined: false,
  },
];

const DECLARATIONS = `declare const tools: {
  ledger: {
    /** Invoices, newest first. */
    listInvoices(args: { customerId?: string; status?: "open" | "paid" | "void"; limit?: number }): Promise<{ id: string; customerId: string; amountCents: number; status: "open" | "paid" | "void"; dueDate: string }[]>;
    getCustomer(args: { id: string }): Promise<{ id: string; name: string; segment: "smb" | "enterprise" }>;
    addNote(args: { invoiceId: string; text: string }): Promise<{ noteId: string }>;
  };
};`;

const SCRIPT = `import _ from "lodash";

type Overdue = { invoiceId: string; customer: string; days: number; amount: number };

const today = new Date("2026-11-30");
const daysLate = (due: string) => Math.floor((today.getTime() - new Date(due).getTime()) / 86_400_000);

const open = await tools.ledger.listInvoices({ status: "open", limit: 500 });
const overdue: Overdue[] = [];
for (const invoice of open) {
  const days = daysLate(invoice.dueDate);
  if (days <= 30) continue;
  const customer = await tools.ledger.getCustomer({ id: invoice.customerId });
  overdue.push({
    invoiceId: invoice.id,
    customer: customer.name,
    days,
    amount: invoice.amountCents / 100,
  });
}

const worst = _.sortBy(overdue, (o: Overdue) => -o.days).slice(0, 10);
for (const item of worst) {
  await tools.ledger.addNote({ invoiceId: item.invoiceId, text: \`Overdue \${item.days} days\` });
}
const total = overdue.reduce((sum, o) => sum + o.amount, 0);
console.log(\`\${overdue.length} overdue invoices\`);

return { count: overdue.length, total, worst };
`;

function benchDecisions() {
  const started = performance.now();
  const prepared = preparePolicySet(defaultPolicyText());
  const prepareMs = performance.now() - started;

  const base: PolicyRequestInput = {
    agent: { id: "agent-1", ownerId: "user-1" },
    facts: { effect: "read_only", openWorld: false, dataClasses: ["internal"], toolCount: 2, readOnlyDataClasses: ["internal"], checks: [] },
    findings: [],
    capabilitySet: ["ledger.getCustomer", "ledger.listInvoices"],
    inputDataClasses: ["public"],
    limits: { timeoutMs: 30_000, cpuSeconds: 60, heapMb: 128, maxToolCalls: 200 },
    isolation: "strict",
  };
  const mix: PolicyRequestInput[] = [
    base,
    { ...base, facts: { ...base.facts, effect: "write" } },
    { ...base, facts: { ...base.facts, effect: "destructive" }, inputDataClasses: ["pii"] },
    { ...base, findings: [{ code: "eval_like", severity: "critical", message: "eval", line: 3, column: 1 }] },
  ];
  const outcomes: Record<string, number> = {};
  /** The i-th request of the mix, for an agent of its own: a request decide has not seen. */
  const distinct = (i: number): PolicyRequestInput => ({ ...mix[i % mix.length]!, agent: { id: `agent-${i}`, ownerId: "user-1" } });
  for (let i = 0; i < 1_000; i++) decide(buildPolicyRequest(distinct(DECISIONS + i)), prepared);

  const samples: number[] = [];
  for (let i = 0; i < DECISIONS; i++) {
    const input = distinct(i);
    const t0 = performance.now();
    const decision = decide(buildPolicyRequest(input), prepared);
    samples.push((performance.now() - t0) * 1000);
    outcomes[decision.decision] = (outcomes[decision.decision] ?? 0) + 1;
  }
  const remembered: number[] = [];
  for (let i = 0; i < DECISIONS; i++) {
    const t0 = performance.now();
    decide(buildPolicyRequest(mix[i % mix.length]!), prepared);
    remembered.push((performance.now() - t0) * 1000);
  }
  return {
    iterations: DECISIONS,
    unit: "us",
    ...summarize(samples, 1),
    outcomes,
    remembered: summarize(remembered, 1),
    preparePolicySetMs: Number(prepareMs.toFixed(1)),
  };
}

function benchAnalysis() {
  const input = { code: SCRIPT, language: "typescript" as const, tools: TOOLS, declarations: DECLARATIONS, allowedPackages: ["lodash"] };
  const t0 = performance.now();
  const first = analyzeScript(input);
  const coldMs = performance.now() - t0;
  // The script writes in a loop on purpose (ten notes): the analyzer's one warning about it is
  // expected; any other finding means the benchmark measures a script the analyzer rejects.
  const unexpected = first.findings.filter((f) => !(f.code === "unbounded_loop" && f.message.startsWith("tools.ledger.addNote ")));
  if (unexpected.length > 0) throw new Error(`benchmark script has findings: ${JSON.stringify(unexpected)}`);

  const samples: number[] = [];
  for (let i = 0; i < ANALYSES; i++) {
    const distinct = { ...input, code: `${SCRIPT}// ${i}\n` };
    const start = performance.now();
    analyzeScript(distinct);
    samples.push(performance.now() - start);
  }
  const cached: number[] = [];
  for (let i = 0; i < ANALYSES; i++) {
    const start = performance.now();
    analyzeScript(input);
    cached.push(performance.now() - start);
  }
  return {
    scriptLines: SCRIPT.trimEnd().split("\n").length,
    iterations: ANALYSES,
    unit: "ms",
    coldMs: Number(coldMs.toFixed(1)),
    ...summarize(samples, 2),
    cached: summarize(cached, 3),
    capabilitySet: first.capabilitySet,
    effect: first.facts.effect,
  };
}

console.log(
  JSON.stringify(
    {
      benchmark: "policy",
      node: process.version,
      cpus: cpus().length,
      typescript: ts.version,
      cedar: cedar.getCedarVersion(),
      decision: benchDecisions(),
      analysis: benchAnalysis(),
    },
    null,
    2,
  ),
);
