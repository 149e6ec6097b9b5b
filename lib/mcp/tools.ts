/**
 * The eight agent tools (lib/mcp/define.ts for what a definition is). Names, argument names and
 * descriptions are a public contract: agents, e2e/mcp.spec.ts and the conformance suite use them.
 */
import { z } from "zod";
import { appRuntime, startedRunChanges, type Runtime } from "@/lib/runs/runtime";
import { listDatasets } from "@/lib/runs/datasets";
import { cancelRunAndWait } from "@/lib/runs/cancel";
import { recordOutcome, recordOutcomeSchema } from "@/lib/runs/outcome";
import { submitRun, submitRunSchema, type SubmitOptions } from "@/lib/intake/submit";
import { callToolSchema, submitDirectCall } from "@/lib/intake/direct";
import { runSkillSchema, submitSkillRun } from "@/lib/intake/skill";
import { getRun, getRunSchema, type RunView } from "@/lib/runs/service";
import { recordAgentRead, recordResultRead, type ResultDoor } from "./audit";
import { searchScriptGlobals } from "@/lib/contracts/script-contract";
import { searchSkills } from "@/lib/skills/catalog";
import { publishedSkills } from "@/lib/skills/service";
import { defineTool, type McpTool, type ToolAnswer, type ToolCall } from "./define";
import { redactSecrets } from "@/lib/untrusted/secrets";
import { storableText } from "@/lib/untrusted/storable-text";

/** Waits this long for an auto-approved run to finish (or a plan preview to end) before submit_run answers. */
const SUBMIT_WAIT_SECONDS = 10;

const runId = z.uuid("runId must be a run id from submit_run");

/**
 * The agent's view of a run (RunView in lib/runs/service.ts) as its output schema: the fields an
 * agent branches on; the rest of RunView (decision, reasons, findings, comments, logs, approvals,
 * capabilitySet, stats, flags, …) is there too but left out of the schema, which is open. Vocabularies (status,
 * error codes) are plain strings here — docs/codes.md lists them — to keep tools/list small.
 */
export const runViewSchema = z.object({
  runId: z.string(),
  status: z.string(),
  error: z.object({ code: z.string() }).optional(),
  result: z.unknown().optional(),
});

/** call_tool's answer: the same view (open), named by what a caller of one read-only tool reads. */
const directViewSchema = runViewSchema.pick({ runId: true, status: true, result: true });

// Compile-time: every RunView is a value of runViewSchema, and the schema names only RunView's fields.
type SchemaView = z.output<typeof runViewSchema>;
const viewFitsSchema = (view: RunView): SchemaView => view;
const schemaNamesViewFields: Record<keyof SchemaView, true> = {} as Record<keyof RunView, true>;
void viewFitsSchema;
void schemaNamesViewFields;

/**
 * A run's view as an agent is answered it, on every door (tools and MCP tasks): what is empty is left
 * out — empty lists, false flags, null fields, and in `rows` an empty `read` and null counts —
 * because every answer stays in the agent's context (about 35 tokens of a small succeeded run's 200).
 * `result` is the script's own value and is kept as it is, null included.
 */
export function agentView(view: RunView): SchemaView & Partial<RunView> {
  const lean: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(view)) {
    const empty = value === null || value === false || (Array.isArray(value) && value.length === 0);
    if (key === "result" || (key !== "rows" && !empty)) lean[key] = value;
  }
  if (view.rows) {
    const { read, returned, covered } = view.rows;
    const rows = { ...(Object.keys(read).length > 0 ? { read } : {}), ...(returned !== null ? { returned } : {}), ...(covered !== null ? { covered } : {}) };
    if (Object.keys(rows).length > 0) lean.rows = rows;
  }
  return lean as SchemaView & Partial<RunView>;
}

/** A run's view as an answer, after recording a regulated result read (lib/mcp/audit.ts). A failed run is an isError result. */
async function runAnswer(call: ToolCall, view: RunView, via: ResultDoor): Promise<ToolAnswer<SchemaView>> {
  await recordResultRead(call.db, call.ctx.agent, view, via);
  return { value: agentView(view), isError: Boolean(view.error) };
}

/** Submits through `submit`, which answers once a queued run settles or SUBMIT_WAIT_SECONDS pass (SubmitOptions.wait). */
async function submitAndWait(
  call: ToolCall,
  door: ResultDoor,
  submit: (runtime: Runtime, options: SubmitOptions) => Promise<RunView>,
): Promise<ToolAnswer<SchemaView>> {
  const runtime = await appRuntime(call.db);
  const view = await submit(runtime, { wait: { seconds: SUBMIT_WAIT_SECONDS, signal: call.signal }, follow: call.ctx.follow });
  return runAnswer(call, view, door);
}

export const searchTools = defineTool({
  name: "search_tools",
  description: "Find tools scripts call as `await tools.<server>.<tool>(args)`, and skills. detail full: TypeScript declarations.",
  scope: "tools:read",
  input: z.strictObject({
    query: z.string().max(200).superRefine(storableText).optional().describe("Words to match; none lists all"),
    server: z.string().max(64).superRefine(storableText).optional().describe("Only this server"),
    detail: z.enum(["name", "summary", "full"]).default("summary"),
  }),
  output: z.object({
    tools: z.array(z.object({ server: z.string(), name: z.string(), summary: z.string().optional() })),
    /** With detail "full": one TypeScript declaration of the tools, skills and globals (`inputs`, `checks`) found. */
    declaration: z.string().optional(),
  }),
  annotations: { readOnlyHint: true },
  textField: "declaration",
  async handler(input, { ctx, db }) {
    const { broker, remembered } = await appRuntime(db);
    const query = input.query ?? "";
    const found = broker.search(query, input.detail, { limit: 50, server: input.server });
    // Skills and globals belong to no server: a search narrowed to one leaves them out.
    const skills = input.server === undefined ? searchSkills(await publishedSkills(db, remembered), query, input.detail) : { skills: [] };
    const globals = input.server === undefined ? searchScriptGlobals(query, input.detail) : { globals: [] };
    await recordAgentRead(db, ctx.agent, {
      action: "tools.searched",
      subject: { type: "tool_registry" },
      // The agent's words as the log keeps any agent text: a credential in them redacted.
      data: {
        query: input.query === undefined ? null : redactSecrets(input.query).text,
        server: input.server === undefined ? null : redactSecrets(input.server).text,
        detail: input.detail,
        results: found.tools.length,
        skills: skills.skills.length,
      },
    });
    const listed = {
      ...(skills.skills.length > 0 ? { skills: skills.skills } : {}),
      ...(globals.globals.length > 0 ? { globals: globals.globals } : {}),
    };
    if (found.declaration === undefined) return { value: { tools: found.tools, ...listed } };
    // The declaration is the whole text an agent reads (define.ts textField), so it says when no tool matched.
    const toolsPart = found.tools.length > 0 ? found.declaration : "// No tool matches this search (search_tools with no query lists every tool).";
    const declaration = [toolsPart, "declaration" in skills ? skills.declaration : undefined, globals.declaration].filter(Boolean).join("\n");
    return { value: { tools: found.tools, ...listed, declaration } };
  },
});

export const submitRunTool = defineTool({
  name: "submit_run",
  description:
    "Run a script: an async function body that may `await tools.<server>.<tool>(args)`, read `inputs`, `return` JSON. Policy allows, escalates to reviewers or denies. Waits briefly; else get_run.",
  scope: "runs:submit",
  input: submitRunSchema,
  output: runViewSchema,
  argDescriptions: {
    code: "The script",
    purpose: "For reviewers",
    inputs: "Dataset names from list_inputs",
    idempotencyKey: "Same key and body: the same run",
  },
  execution: { taskSupport: "optional" },
  // submitRun validates with submitRunSchema itself: it checks the code size first and audits refusals.
  rawHandler: (args, call) => submitAndWait(call, "submit_run", (runtime, options) => submitRun(runtime, call.ctx.agent, args, options)),
});

export const callToolTool = defineTool({
  name: "call_tool",
  description: "Call one read-only tool, no script.",
  scope: "runs:submit",
  input: callToolSchema,
  output: directViewSchema,
  // submitDirectCall validates with callToolSchema itself and audits refusals.
  rawHandler: (args, call) => submitAndWait(call, "call_tool", (runtime, options) => submitDirectCall(runtime, call.ctx.agent, args, options)),
});

export const runSkillTool = defineTool({
  name: "run_skill",
  description: "Run a reviewed skill from search_tools.",
  scope: "runs:submit",
  input: runSkillSchema,
  output: directViewSchema,
  // submitSkillRun validates with runSkillSchema itself and audits refusals.
  rawHandler: (args, call) => submitAndWait(call, "run_skill", (runtime, options) => submitSkillRun(runtime, call.ctx.agent, args, options)),
});

export const getRunTool = defineTool({
  name: "get_run",
  description: "A run's status and, once finished, result. waitSeconds: wait for a change.",
  scope: "runs:read",
  input: getRunSchema,
  output: runViewSchema,
  annotations: { readOnlyHint: true },
  async handler(input, call) {
    return runAnswer(call, await getRun({ db: call.db, changes: await startedRunChanges() }, call.ctx.agent, input, call.signal), "get_run");
  },
});

export const cancelRunTool = defineTool({
  name: "cancel_run",
  description: "Cancel a run that has not finished.",
  scope: "runs:submit",
  input: z.strictObject({ runId }),
  output: z.object({ runId: z.string(), status: z.string() }),
  annotations: { destructiveHint: false, idempotentHint: true },
  async handler(input, { ctx, db, signal }) {
    return { value: await cancelRunAndWait({ db, changes: await startedRunChanges() }, ctx.agent, input.runId, signal) };
  },
});

export const listInputs = defineTool({
  name: "list_inputs",
  description: "Datasets a script may read as inputs.",
  scope: "inputs:read",
  input: z.strictObject({}),
  output: z.object({
    // Open: each also carries its data class, size, sha256 and mediaType.
    inputs: z.array(z.object({ name: z.string() })),
  }),
  annotations: { readOnlyHint: true },
  async handler(_input, { ctx, db }) {
    const inputs = await listDatasets(db);
    await recordAgentRead(db, ctx.agent, { action: "inputs.listed", subject: { type: "dataset_list" }, data: { count: inputs.length } });
    return { value: { inputs } };
  },
});

export const recordOutcomeTool = defineTool({
  name: "record_outcome",
  description: "Record what you did with a run's result.",
  scope: "runs:submit",
  input: recordOutcomeSchema,
  // Open, like runViewSchema: the answer also carries runId, action and at.
  output: z.object({ outcomeId: z.string() }),
  // recordOutcome validates with recordOutcomeSchema itself.
  async rawHandler(args, { ctx, db }) {
    return { value: await recordOutcome(db, ctx.agent, args) };
  },
});

export const MCP_TOOLS: readonly McpTool[] = [searchTools, submitRunTool, callToolTool, runSkillTool, getRunTool, cancelRunTool, listInputs, recordOutcomeTool];
