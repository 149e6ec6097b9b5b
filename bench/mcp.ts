/**
 * `npm run bench:mcp` — the agent door's costs, printed as one JSON object:
 *
 * - tokens of the whole `tools/list` answer (eight tools, input and output schemas generated from
 *   zod) and of a `search_tools` detail=full answer for one tool, counted with a real tokenizer
 *   (gpt-tokenizer, o200k_base), with the 1,100-token budget for tools/list (`withinBudget`), and of
 *   `tools/list` on a connection whose URL selects the three code-mode tools (CODE_MODE_QUERY); the
 *   search answer whole (text and structuredContent), its text alone (the declaration, unescaped)
 *   and its structuredContent alone;
 * - submit → decision latency through the MCP endpoint (SDK client → HTTP → auth → intake →
 *   analysis → Cedar → PostgreSQL), p50/p95, for a script that policy escalates (no execution): a
 *   read of a customer (pii), which goes to reviewers at once (a write would first be previewed,
 *   and submit_run waits for its plan);
 *   the baseline in the same run is a `tools/list` round trip over the same connection, so the
 *   difference is what intake, analysis and policy cost;
 * - what the plan preview adds before reviewers are asked: submit → pending_review (plan ready,
 *   the moment reviewers are notified) for a script that reads and then writes, through a runtime
 *   that executes (in-process queue, warm sandbox pool); against the same script's own run time,
 *   measured as submit → succeeded for its read-only half, which policy runs at once. Target:
 *   preview ≤ 1.5 × that run time + 50 ms;
 * - the direct lane: a read-only call_tool, submit → succeeded (a sealed run of kind direct, no
 *   sandbox), through the same runtime, against the same call made to the upstream directly over
 *   the broker's connection, in the same run;
 * - a standing approval: run_skill of a skill that sends a reminder (a write policy sends to two
 *   reviewers), covered by a standing approval, submit → succeeded, against the read-only script's
 *   submit → succeeded above: what the skill lane and the approval's use cost on top of a run.
 *
 * - the result gate on a 1,000-row result (lib/runs/gate.ts, lib/runs/pii-tokens.ts): screening
 *   (normalization and secret redaction), finding personal data (marked fields and detection),
 *   assigning its tokens in PostgreSQL, and the read that hands the agent the tokenized result;
 *   p50/p95 of each and of their sum, against a JSON round trip of the same envelope (which the
 *   result path pays anyway). Target: the gate's sum ≤ 10 ms p50.
 *
 * The endpoint runs in this process (./endpoint.ts), here without executing runs; Next's own
 * routing overhead is not included.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode } from "gpt-tokenizer";
import { DEFAULT_AGENT_SCOPES } from "@/lib/contracts/scopes";
import type { createPrismaClient } from "@/lib/db";
import { env } from "@/lib/env";
import { CODE_MODE_QUERY, startBenchEndpoint } from "./endpoint";

const SUBMITS = 200;
const TOOLS_LIST_BUDGET = 1100;

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { n: samples.length, p50: at(0.5), p95: at(0.95), max: at(1) };
}

const GATE_SAMPLES = 50;

/**
 * The gate's cost on a 1,000-row result, in two cases: invoices (ids, amounts, dates: no personal
 * data) and customers (a name and an email at marked fields and a detected phone per row, 3,000
 * tokens). Each sample is a new run of the same conversation: the first assigns every token,
 * later ones find them and record their own use, as when the next run returns the same people.
 */
async function measureGate(db: ReturnType<typeof createPrismaClient>, agentName: string) {
  const { screenEnvelope } = await import("@/lib/runs/gate");
  const { MarkedValues, assignTokens, personalData, runTokens, tokenized } = await import("@/lib/runs/pii-tokens");
  const { emptyGate } = await import("@/lib/sandbox/types");
  const agent = await db.agent.findFirstOrThrow({ where: { name: agentName } });
  const day = (i: number) => `2026-11-${String((i % 28) + 1).padStart(2, "0")}`;
  const cases = {
    invoices: Array.from({ length: 1000 }, (_, i) => ({
      id: `inv_${i}`,
      customerId: `cus_${i % 90}`,
      amountMinor: 1000 + i,
      currency: "EUR",
      status: "paid",
      issuedAt: day(i),
    })),
    customers: Array.from({ length: 1000 }, (_, i) => ({
      id: `cus_${i}`,
      name: `Customer Number${i} Smith`,
      email: `customer.${i}@example.org`,
      phone: `+44 20 7946 ${String(1000 + (i % 9000)).padStart(4, "0")}`,
      note: i % 50 === 0 ? `key ghp_${"a1B2c3D4".repeat(5)}` : `paid on ${day(i)}`,
    })),
  };
  const out: Record<string, unknown> = { targetTotalP50Ms: 10 };
  for (const [name, rows] of Object.entries(cases)) {
    const envelope = {
      status: "succeeded" as const,
      result: rows,
      logs: [{ level: "log" as const, text: `read ${rows.length} rows` }],
      error: null,
      stats: { wallMs: 1, cpuMs: 1, peakRssMb: 1, toolCalls: 1 },
      flags: [],
      truncated: false,
      isolation: { level: "strict" as const, node: "", layers: { permissionModel: true, bubblewrap: true, prlimit: true, uid: 65534, cgroup: "none" } },
      artifacts: [],
      gate: emptyGate(),
    };
    const marked = new MarkedValues();
    marked.note({ "customers[].email": "EMAIL", "customers[].name": "NAME" }, { customers: name === "customers" ? rows : [] });
    const scope = `${agent.id}/bench-${name}`;
    const samples = {
      baseline: [] as number[],
      screen: [] as number[],
      detect: [] as number[],
      assign: [] as number[],
      read: [] as number[],
      total: [] as number[],
    };
    let tokens = 0;
    for (let i = 0; i < GATE_SAMPLES; i++) {
      // Each sample is the next run of the conversation: its own token-use row, in a new run.
      const run = await db.run.create({
        data: {
          agentId: agent.id,
          language: "javascript",
          code: "return rows;",
          codeSha256: "bench",
          purpose: `gate bench ${name}`,
          inputsDigest: "x",
          requestDigest: `gate-${name}-${i}`,
        },
      });
      let t = performance.now();
      JSON.parse(JSON.stringify(envelope));
      samples.baseline.push(performance.now() - t);
      const start = performance.now();
      const screened = screenEnvelope(envelope, false, []);
      samples.screen.push(performance.now() - start);
      t = performance.now();
      const personal = await personalData([screened.result, screened.logs.map((l) => l.text)], marked);
      samples.detect.push(performance.now() - t);
      t = performance.now();
      await db.$transaction((tx) => assignTokens(tx, scope, run.id, personal));
      samples.assign.push(performance.now() - t);
      t = performance.now();
      const used = await runTokens(db, run.id);
      tokenized(screened.result, used);
      samples.read.push(performance.now() - t);
      samples.total.push(performance.now() - start);
      tokens = used.length;
    }
    out[name] = { rows: rows.length, tokens, ...Object.fromEntries(Object.entries(samples).map(([key, values]) => [`${key}Ms`, summarize(values)])) };
  }
  return out;
}

const PREVIEW_SAMPLES = 30;
const DIRECT_SAMPLES = 30;
const READ = `const page = await tools.ledger.listInvoices({ status: "open", limit: 5 });`;

/**
 * Through a runtime that executes: submit → plan ready (reviewers notified) for a read-then-write
 * script, against its read-only half's submit → succeeded; and a read-only call_tool, submit →
 * succeeded, against the same call made to the upstream directly.
 */
async function measurePreview(db: ReturnType<typeof createPrismaClient>, agentName: string) {
  const { createRuntime, demoConfig } = await import("@/lib/runs/runtime");
  const { submitRun } = await import("@/lib/intake/submit");
  const { getRun } = await import("@/lib/runs/service");
  const agentRow = await db.agent.findFirstOrThrow({ where: { name: agentName } });
  const agent = { type: "agent", id: agentRow.id, name: agentRow.name, ownerId: agentRow.ownerId, scopes: DEFAULT_AGENT_SCOPES } as const;
  const runtime = await createRuntime(
    db,
    { ...demoConfig(join(await mkdtemp(join(tmpdir(), "airlock-bench-ledger-")), "state.json")), sandbox: { isolation: "strict", poolSize: 2 } },
    {
      databaseUrl: env().DATABASE_URL!,
      execute: true,
    },
  );
  const until = async (runId: string, status: string) => {
    for (;;) {
      const view = await getRun(runtime, agent, { runId, waitSeconds: 30 });
      if (view.status === status) return;
      if (!["previewing", "queued", "running", "auto_approved"].includes(view.status))
        throw new Error(`run ${runId} ended ${view.status}: ${JSON.stringify(view.error)}`);
    }
  };
  const runs: number[] = [];
  const previews: number[] = [];
  const directLane: number[] = [];
  const upstream: number[] = [];
  const standing: number[] = [];
  try {
    // call_tool against the same call made to the upstream directly, over the broker's own connection.
    const { submitDirectCall } = await import("@/lib/intake/direct");
    const args = { status: "open", limit: 5 };
    for (let i = 0; i < DIRECT_SAMPLES; i++) {
      let t = performance.now();
      await runtime.broker.callTool("ledger", "listInvoices", args, AbortSignal.timeout(10_000));
      upstream.push(performance.now() - t);
      t = performance.now();
      const view = await submitDirectCall(runtime, agent, { server: "ledger", tool: "listInvoices", arguments: args });
      await until(view.runId, "succeeded");
      directLane.push(performance.now() - t);
    }
    for (let i = 0; i < PREVIEW_SAMPLES; i++) {
      let t = performance.now();
      const read = await submitRun(runtime, agent, { code: `// ${i}\n${READ}\nreturn page.invoices.length;`, purpose: "bench run" });
      await until(read.runId, "succeeded");
      runs.push(performance.now() - t);
      t = performance.now();
      const write = await submitRun(runtime, agent, {
        code: `// ${i}\n${READ}\nawait tools.ledger.sendReminderEmail({ invoiceId: page.invoices[0].id, message: "Please pay" });\nreturn 1;`,
        purpose: "bench preview",
      });
      await until(write.runId, "pending_review");
      previews.push(performance.now() - t);
    }
    const { submitSkillRun } = await import("@/lib/intake/skill");
    await standingApprovedSkill(db, agentRow.id);
    for (let i = 0; i < DIRECT_SAMPLES; i++) {
      const t = performance.now();
      const view = await submitSkillRun(runtime, agent, { name: "benchRemind", arguments: { invoiceId: "inv_0001" } });
      await until(view.runId, "succeeded");
      standing.push(performance.now() - t);
    }
  } finally {
    await runtime.close();
  }
  const run = summarize(runs);
  const toReviewers = summarize(previews);
  const target = Number((1.5 * run.p50 + 50).toFixed(2));
  return {
    preview: { scriptRunMs: run, submitToReviewersMs: toReviewers, targetP50Ms: target, withinTarget: toReviewers.p50 <= target },
    directLane: { callToolMs: summarize(directLane), baselineUpstreamCallMs: summarize(upstream) },
    standingApproval: { runSkillMs: summarize(standing), baselineScriptRunMs: run },
  };
}

/** A published skill that sends one reminder, and a standing approval (two admins) covering the bench agent's calls. */
async function standingApprovedSkill(db: ReturnType<typeof createPrismaClient>, agentId: string) {
  const [a, b] = await Promise.all(
    ["bench-skill-a@example.com", "bench-skill-b@example.com"].map((email) => db.user.create({ data: { email, name: email, role: "admin" } })),
  );
  const skill = await db.skill.create({ data: { name: "benchRemind" } });
  const version = await db.skillVersion.create({
    data: {
      skillId: skill.id,
      version: 1,
      status: "published",
      description: "Remind one invoice's customer",
      language: "javascript",
      code: 'async (args) => {\nconst sent = await tools.ledger.sendReminderEmail({ invoiceId: args.invoiceId, message: "Please pay" });\nreturn sent.reminderId;\n}',
      inputSchema: { type: "object", properties: { invoiceId: { type: "string" } }, required: ["invoiceId"], additionalProperties: false },
      outputSchema: { type: "string" },
      fingerprint: "0".repeat(64),
      contentDigest: "0".repeat(64),
      draftedById: a!.id,
    },
  });
  await db.standingApproval.create({
    data: {
      skillVersionId: version.id,
      agentIds: [agentId],
      bounds: { type: "object" },
      notBefore: new Date(Date.now() - 1000),
      notAfter: new Date(Date.now() + 3_600_000),
      maxUses: 1_000,
      reason: "bench",
      proposedById: a!.id,
      confirmedById: b!.id,
      confirmedAt: new Date(),
    },
  });
}

async function main() {
  // Intake alone: the endpoint's process does not execute; measurePreview starts a runtime that does.
  const endpoint = await startBenchEndpoint({ AIRLOCK_BUDGET_PENDING_REVIEWS: "10000", AIRLOCK_IN_PROCESS_WORKER: "false" });
  const { client, db, agentName } = endpoint;
  const list = await client.listTools();
  const toolsListTokens = encode(JSON.stringify(list)).length;
  const codeModeListTokens = encode(JSON.stringify(await (await endpoint.connect(CODE_MODE_QUERY)).listTools())).length;
  const full = await client.callTool({ name: "search_tools", arguments: { query: "listInvoices", detail: "full" } });
  const fullTokens = encode(JSON.stringify(full)).length;
  // What a client that hands the model the text pays (the declaration alone, unescaped), and what
  // one that hands it structuredContent pays.
  const fullTextTokens = encode((full.content as { type: string; text: string }[]).map((block) => block.text).join("")).length;
  const fullStructuredTokens = encode(JSON.stringify(full.structuredContent)).length;

  const baseline: number[] = [];
  const submits: number[] = [];
  for (let i = 0; i < SUBMITS; i++) {
    let t = performance.now();
    await client.listTools();
    baseline.push(performance.now() - t);
    t = performance.now();
    const result = await client.callTool({
      name: "submit_run",
      arguments: { code: `// attempt ${i}\nreturn await tools.ledger.getCustomer({ customerId: "cus_001" });`, purpose: "bench" },
    });
    submits.push(performance.now() - t);
    // Every sample is a decision: a submit that waited for something else would not be one.
    if ((result.structuredContent as { status?: string }).status !== "pending_review") throw new Error(`unexpected submit result: ${JSON.stringify(result)}`);
  }
  const { preview, directLane, standingApproval } = await measurePreview(db, agentName);
  const gate = await measureGate(db, agentName);

  console.log(
    JSON.stringify(
      {
        benchmark: "mcp",
        node: process.version,
        tokens: {
          tokenizer: "o200k_base",
          toolsList: toolsListTokens,
          budget: TOOLS_LIST_BUDGET,
          withinBudget: toolsListTokens <= TOOLS_LIST_BUDGET,
          withOutputSchemas: list.tools.every((tool) => tool.outputSchema !== undefined),
          toolsListCodeMode: codeModeListTokens,
          searchToolsFullOneTool: fullTokens,
          searchToolsFullOneToolText: fullTextTokens,
          searchToolsFullOneToolStructured: fullStructuredTokens,
        },
        submitToDecisionMs: summarize(submits),
        baselineToolsListRoundTripMs: summarize(baseline),
        preview,
        directLane,
        standingApproval,
        gate,
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
