/**
 * `airlock exec`: runs one script file, through one of two doors, and never through neither.
 *
 * `--agent NAME [--as EMAIL]`: the governed door. FILE is submitted as that agent's proposal
 * through submitRun (lib/intake/submit.ts) — the same closed schema, budgets, analysis, published
 * policy, plan preview, review and binding as the agent's own submit_run — against the configured
 * upstreams (the server's configuration and tool pins). The agent must exist, not be revoked, and
 * hold an unrevoked, unexpired token with `runs:submit` and `runs:read` (its scopes are those
 * tokens'). run.submitted records the door (`via: cli:exec`) and who used it: the person --as
 * names (an existing, enabled user; a refusal is audited as auth.forbidden), else `system:cli`.
 * The command prints the decision and its reasons, then waits: an escalated run prints that it
 * waits for reviewers and its id, and exits 3, unless --wait (then it waits for the reviewers and
 * the run). Runs are executed by the server's workers (npm start or npm run worker), as any run.
 * A result on regulated data is recorded as read (run.result_read, via `cli:exec`) before it is
 * printed. Exit 0: succeeded; 1: anything else that ended (denied, rejected, failed, …) or a refusal;
 * 3: waiting for reviewers. The database must exist (lib/cli/database.ts `mustExist`).
 *
 * `--dev`: the developer door, which applies no policy, no review and no audit, and says so on
 * stderr before anything runs. It runs FILE directly in the sandbox against the demo upstream, on
 * a ledger state of its own (ledger-state-dev.json in the data directory, so the server's ledger
 * never sees an unaudited write), or against the config file --config names — never the server's
 * configured upstreams. Tools are allowed only by name (`--allow`) or all at once (`--allow-all`,
 * never quarantined ones); the isolation level is the flag's, else the config's; a level the host
 * cannot provide fails the run (SANDBOX_UNAVAILABLE). The script is analysed first and findings printed with line and column.
 * It refuses the server's own configuration file (AIRLOCK_CONFIG or ./airlock.config.json, by real
 * path), and touches no database: tools are pinned on first sight, for this command only
 * (./upstreams.ts withDevBroker). Exit 0 when the run succeeded, 1 when not. The
 * sandbox's temporary directories (and its scratch mount) are gone before the command returns.
 *
 * Neither --agent nor --dev, or a flag of the other door: usage, exit 2.
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { basename, extname, join, resolve } from "node:path";
import { hasScope, isScope, type Actor, type Scope } from "@/lib/contracts/scopes";
import { TERMINAL_STATUSES } from "@/lib/contracts/run-states";
import type { Db } from "@/lib/db";
import { env } from "@/lib/env";
import { AppError } from "@/lib/errors";
import { analyzeScript } from "@/lib/intake/analyze";
import { submitRun } from "@/lib/intake/submit";
import { recordResultRead } from "@/lib/mcp/audit";
import { createRuntime, demoConfig, resolveConfig, serverConfigPath, type Runtime } from "@/lib/runs/runtime";
import { getRun, type AgentActor, type RunView } from "@/lib/runs/service";
import { ALLOWED_BUILTINS, ISOLATION_LEVELS, membersTornDown, runInSandbox, type Envelope, type IsolationLevel, type StagedInput } from "@/lib/sandbox";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, emailFlag, exitOnUsageError, namingFlags, parseCliArgs, UsageError, wholeNumberFlag, type CliIo } from "./io";
import { actingAs } from "./person";
import { loadCliConfig, withDevBroker } from "./upstreams";

export const EXEC_USAGE = `Usage: airlock exec --agent NAME [--as EMAIL] [--input DATASET]... [--purpose TEXT] [--wait] [--json] FILE
       airlock exec --dev [--config PATH] [--input NAME=PATH]... [--allow SERVER.TOOL,...|--allow-all]
                    [--isolation strict|permission-only] [--timeout-ms N] [--json] FILE

FILE (.js/.mjs: JavaScript, .ts/.mts: TypeScript) is the body of an async function.
--agent submits it as that agent's proposal, under the published policy and review like the
agent's own submit_run, against the configured upstreams; the server's workers run it. --as
records who ran the command. Exit 0: it succeeded; 1: it did not; 3: it waits for reviewers
(the run id is printed; --wait waits for them).
--dev runs it directly in the sandbox against the demo upstream or --config PATH, with no policy,
no review and no audit. Exit 0: it succeeded; 1: it did not.
Exit 2: bad arguments.
`;

/** Exit code of `--agent` when the run waits for reviewers (without --wait). */
export const EXIT_AWAITING_REVIEW = 3;

const DEV_ONLY = ["config", "allow", "allow-all", "isolation", "timeout-ms"] as const;
const AGENT_ONLY = ["as", "wait", "purpose"] as const;

const badArgs = (message: string) => new UsageError(message, EXEC_USAGE, "exec");

function parse(argv: string[]) {
  const { values, positionals } = parseCliArgs(
    argv,
    {
      agent: { type: "string" },
      as: { type: "string" },
      purpose: { type: "string" },
      wait: { type: "boolean" },
      dev: { type: "boolean", default: false },
      input: { type: "string", multiple: true, default: [] },
      allow: { type: "string" },
      "allow-all": { type: "boolean" },
      isolation: { type: "string" },
      "timeout-ms": { type: "string" },
      json: { type: "boolean", default: false },
      config: { type: "string" },
    },
    EXEC_USAGE,
    { allowPositionals: true, command: "exec" },
  );
  if (values.agent === undefined && !values.dev) throw badArgs("say how to run FILE: --agent NAME (policy, review, audit) or --dev (none of them)");
  if (values.agent !== undefined && values.dev) throw badArgs("use --agent or --dev, not both");
  const others = values.dev ? AGENT_ONLY : DEV_ONLY;
  const misplaced = others.find((flag) => values[flag] !== undefined);
  if (misplaced) throw badArgs(`--${misplaced} is only for ${values.dev ? "--agent" : "--dev"}`);
  if (positionals.length !== 1) throw badArgs("exactly one FILE is required");
  const file = positionals[0]!;
  const ext = extname(file);
  const language = [".ts", ".mts"].includes(ext) ? "typescript" : [".js", ".mjs"].includes(ext) ? "javascript" : null;
  if (!language) throw badArgs(`FILE must end in .js, .mjs, .ts or .mts (got '${ext || file}')`);
  const common = { file, language: language as "typescript" | "javascript", json: values.json };
  if (values.agent !== undefined) {
    if (values.agent.trim() === "") throw badArgs("--agent needs an agent name");
    if (values.as !== undefined) emailFlag(values.as, "--as", EXEC_USAGE, "exec");
    const datasets = values.input;
    const withPath = datasets.find((name) => name.includes("="));
    if (withPath) throw badArgs(`with --agent, --input names a dataset (list_inputs shows them), not NAME=PATH (got '${withPath}')`);
    return { mode: "agent" as const, ...common, agent: values.agent, as: values.as, purpose: values.purpose, wait: values.wait === true, datasets };
  }
  const inputs: StagedInput[] = values.input.map((spec) => {
    const eq = spec.indexOf("=");
    if (eq <= 0 || eq === spec.length - 1) throw badArgs(`--input must be NAME=PATH (got '${spec}')`);
    return { name: spec.slice(0, eq), path: spec.slice(eq + 1) };
  });
  if (values.allow !== undefined && values["allow-all"]) throw badArgs("use --allow or --allow-all, not both");
  const allow =
    values.allow === undefined
      ? []
      : values.allow
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
  for (const name of allow) if (!/^[A-Za-z_][A-Za-z0-9_]*\.[^\s]+$/.test(name)) throw badArgs(`--allow takes SERVER.TOOL names (got '${name}')`);
  if (values.isolation !== undefined && !(ISOLATION_LEVELS as readonly string[]).includes(values.isolation)) {
    throw badArgs(`--isolation must be one of ${ISOLATION_LEVELS.join(", ")}`);
  }
  const timeoutMs = wholeNumberFlag(values["timeout-ms"], "--timeout-ms", { min: 1, max: 3_600_000 }, EXEC_USAGE, "exec");
  return {
    mode: "dev" as const,
    ...common,
    inputs,
    allow,
    allowAll: values["allow-all"] === true,
    isolation: values.isolation as IsolationLevel | undefined,
    timeoutMs,
    config: values.config,
  };
}

type AgentArgs = Extract<ReturnType<typeof parse>, { mode: "agent" }>;
type DevArgs = Extract<ReturnType<typeof parse>, { mode: "dev" }>;

export function formatEnvelope(env: Envelope): string {
  const lines = [`status: ${env.status}${env.error ? ` (${env.error.code})` : ""}`];
  if (env.error) lines.push(`error${env.error.untrusted ? " [untrusted]" : ""}: ${env.error.message}`);
  for (const log of env.logs) lines.push(`[${log.level}] ${log.text}`);
  if (env.truncated) lines.push("[logs truncated]");
  if (env.result !== null) lines.push(`result: ${JSON.stringify(env.result, null, 2)}`);
  for (const a of env.artifacts) lines.push(`artifact: out/${a.name} (${a.sizeBytes} bytes, sha256 ${a.sha256.slice(0, 16)}…)`);
  if (env.flags.length > 0) lines.push(`flags: ${env.flags.join(", ")}`);
  const { wallMs, cpuMs, peakRssMb, toolCalls } = env.stats;
  lines.push(`stats: ${wallMs} ms wall, ${cpuMs} ms cpu, ${peakRssMb} MB peak RSS, ${toolCalls} tool calls`);
  lines.push(
    `isolation: ${env.isolation.level} (node ${env.isolation.node}, bubblewrap ${env.isolation.layers.bubblewrap}, cgroup ${env.isolation.layers.cgroup})`,
  );
  return `${lines.join("\n")}\n`;
}

/** The decision as `--agent` prints it first: status, policy, reasons, findings, approvals, reviewers' comments. */
export function formatDecision(view: RunView): string {
  const lines = [`run ${view.runId}: ${view.status}${view.decision ? ` (policy: ${view.decision})` : ""}`];
  for (const reason of view.reasons) lines.push(`  reason [${reason.policyId}]: ${reason.text}`);
  for (const f of view.findings) lines.push(`  finding ${f.line}:${f.column} ${f.severity} ${f.code}: ${f.message}`);
  if (view.approvals) lines.push(`  approvals: ${view.approvals.approvedBy.length} of ${view.approvals.required}`);
  for (const c of view.comments) lines.push(`  reviewer (${c.verdict}): ${c.comment}`);
  return `${lines.join("\n")}\n`;
}

/** How the run ended, as `--agent` prints it last: its error, logs and result. */
export function formatEnded(view: RunView): string {
  const lines = [`status: ${view.status}${view.error ? ` (${view.error.code})` : ""}`];
  if (view.error) lines.push(`error${view.error.untrusted ? " [untrusted]" : ""}: ${view.error.message}`);
  for (const log of view.logs ?? []) lines.push(`[${log.level}] ${log.text}`);
  if (view.result !== undefined) lines.push(`result: ${JSON.stringify(view.result, null, 2)}`);
  return `${lines.join("\n")}\n`;
}

/** The agent `--agent` names, acting with the scopes of its live tokens; refuses unknown, revoked or tokenless agents. */
async function cliAgent(db: Db, name: string): Promise<AgentActor> {
  const row = await db.agent.findUnique({ where: { name }, include: { tokens: true } });
  if (!row) throw new AppError("not_found", `No agent named ${name}.`);
  if (row.revokedAt) throw new AppError("forbidden", `Agent ${name} is revoked.`, { details: { reason: "agent_revoked" } });
  const now = new Date();
  const live = row.tokens.filter((t) => !t.revokedAt && (!t.expiresAt || t.expiresAt > now));
  if (live.length === 0)
    throw new AppError("forbidden", `Agent ${name} has no unrevoked, unexpired token, so it cannot act.`, { details: { reason: "no_token" } });
  const scopes = [...new Set(live.flatMap((t) => t.scopes).filter(isScope))] as Scope[];
  const agent: AgentActor = { type: "agent", id: row.id, name: row.name, ownerId: row.ownerId, scopes };
  for (const scope of ["runs:submit", "runs:read"] as const) {
    if (!hasScope(agent, scope)) throw new AppError("forbidden", `Agent ${name} lacks ${scope}, which airlock exec --agent needs.`, { details: { scope } });
  }
  return agent;
}

const WAITING_FOR_REVIEW = new Set(["previewing", "pending_review", "pending_release"]);
const isTerminal = (status: string) => (TERMINAL_STATUSES as readonly string[]).includes(status);

async function execAsAgent(args: AgentArgs, code: string, io: CliIo): Promise<number> {
  return withCliDatabase(
    async (db, { appUrl }) => {
      const agent = await cliAgent(db, args.agent);
      const submit = async (by: Actor) => {
        const runtime = await createRuntime(db, resolveConfig(), { databaseUrl: appUrl, execute: false });
        try {
          const submitted = await namingFlags({ purpose: "--purpose", inputs: "--input" }, () =>
            submitRun(
              runtime,
              agent,
              { code, language: args.language, purpose: args.purpose ?? `airlock exec ${basename(args.file)}`, inputs: args.datasets },
              { via: { door: "cli:exec", by } },
            ),
          );
          return await follow(runtime, agent, submitted, args, io);
        } finally {
          await runtime.close();
        }
      };
      return args.as === undefined ? submit(CLI_ACTOR) : actingAs(db, args.as, "cli:exec", submit);
    },
    { mustExist: true },
  );
}

/** Prints the decision, then waits as the flags say; the exit code. */
async function follow(runtime: Runtime, agent: AgentActor, submitted: RunView, args: AgentArgs, io: CliIo): Promise<number> {
  const { db } = runtime;
  let view = submitted;
  if (!args.json) io.stdout(formatDecision(view));
  let toldQueued = false;
  const started = Date.now();
  while (!isTerminal(view.status)) {
    if (WAITING_FOR_REVIEW.has(view.status) && !args.wait) {
      if (args.json) io.stdout(`${JSON.stringify(view, null, 2)}\n`);
      else
        io.stdout(
          `Waiting for reviewers: run ${view.runId} is decided in the console (${view.consoleUrl}); follow it there. ` +
            `Running this command again submits the script again, as a second run: use --wait to submit and wait in one go.\n`,
        );
      return EXIT_AWAITING_REVIEW;
    }
    if (view.status === "queued" && !toldQueued && Date.now() - started > 5_000) {
      toldQueued = true;
      if (!args.json) io.stderr("airlock exec: the run is queued; it runs when a worker takes it (npm start or npm run worker).\n");
    }
    const previous = view.status;
    // Ends as soon as the run changes (the runtime's pushed run changes).
    view = await getRun(runtime, agent, { runId: view.runId, waitSeconds: 5 });
    if (!args.json && view.status !== previous) io.stdout(`run ${view.runId}: ${view.status}\n`);
  }
  await recordResultRead(db, agent, view, "cli:exec");
  io.stdout(args.json ? `${JSON.stringify(view, null, 2)}\n` : formatEnded(view));
  return view.status === "succeeded" ? 0 : 1;
}

/** Is `path` the file the server's configuration comes from (the same file, by its real path)? */
function isServerConfig(path: string): boolean {
  const server = serverConfigPath();
  const real = (p: string) => (existsSync(p) ? realpathSync(p) : resolve(p));
  return server !== null && real(path) === real(server);
}

async function execDev(args: DevArgs, code: string, io: CliIo): Promise<number> {
  if (args.config !== undefined && isServerConfig(args.config)) {
    throw badArgs(`--dev does not run against the server's own configuration (${args.config}): its upstreams are governed; use --agent NAME`);
  }
  // The demo ledger on a state of its own: the server's ledger never sees an unaudited write.
  const devLedgerState = join(resolve(env().AIRLOCK_DATA_DIR), "ledger-state-dev.json");
  const config = args.config === undefined ? demoConfig(devLedgerState) : loadCliConfig(args.config, io, "exec");
  if (!config) return 1;
  const against = args.config === undefined ? `the demo upstream (ledger) on its own state, ${devLedgerState}, never the server's` : args.config;
  io.stderr(`airlock exec: DEV MODE — unaudited: no policy, no review, no audit log; against ${against}.\n`);
  return withDevBroker(config, io, "exec", async (broker) => {
    const known = broker.tools().map((t) => `${t.server}.${t.name}`);
    const unknown = args.allow.filter((name) => !known.includes(name));
    if (unknown.length > 0) throw badArgs(`--allow names tools no upstream offers: ${unknown.join(", ")}`);
    const allowed = args.allowAll
      ? broker
          .tools()
          .filter((t) => !t.quarantined)
          .map((t) => `${t.server}.${t.name}`)
      : args.allow;
    const { findings } = analyzeScript({
      code,
      language: args.language,
      tools: broker
        .tools()
        .map(({ server, name, annotations, dataClass, quarantined, inputSchema }) => ({ server, name, annotations, dataClass, quarantined, inputSchema })),
      declarations: broker.declarations(),
      allowedPackages: [...config.packages, ...ALLOWED_BUILTINS],
    });
    if (!args.json) {
      for (const f of findings) io.stderr(`${args.file}:${f.line}:${f.column}: ${f.severity} ${f.code}: ${f.message}\n`);
    }
    const env = await runInSandbox({
      code,
      language: args.language,
      inputs: args.inputs,
      allowedTools: allowed,
      knownTools: known,
      callTool: broker.callTool,
      isolation: args.isolation ?? config.sandbox.isolation,
      packages: config.packages,
      limits: args.timeoutMs === undefined ? {} : { timeoutMs: args.timeoutMs },
    });
    // The CLI exits right after this command: wait until the sandbox's directories are removed.
    await membersTornDown();
    io.stdout(args.json ? `${JSON.stringify({ ...env, findings }, null, 2)}\n` : formatEnvelope(env));
    if (env.error?.code === "CAPABILITY_DENIED" && !args.allowAll) {
      io.stderr("airlock exec: --dev lets a script call only the tools named with --allow SERVER.TOOL,... (or every tool with --allow-all).\n");
    }
    return env.status === "succeeded" ? 0 : 1;
  });
}

export async function execCommand(argv: string[], io: CliIo): Promise<number> {
  return exitOnUsageError(io, async () => {
    const args = parse(argv);
    let bytes: Buffer;
    try {
      bytes = readFileSync(args.file);
    } catch (error) {
      // A file that cannot be read is a refused value (exit 1), as in `policy validate`, not wrong arguments.
      throw new AppError("bad_request", `cannot read ${args.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    let code: string;
    try {
      // Bytes that are not UTF-8 are refused, not replaced: the code hashed and reviewed is the file's.
      code = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw new AppError("bad_request", `${args.file} is not UTF-8 text; save the script as UTF-8.`);
    }
    return args.mode === "agent" ? execAsAgent(args, code, io) : execDev(args, code, io);
  });
}
