/**
 * `airlock exec FILE`: runs one script in the sandbox against the configured upstreams and prints
 * its envelope. Exit 0 when the run succeeded, 1 when it did not (or the upstreams/config could
 * not be used), 2 for bad arguments. Tools are allowed only by name (`--allow`) or all at once
 * (`--allow-all`, never quarantined ones); with neither, the script may call no tool. The
 * isolation level is the flag's, else the config's; a level the host cannot provide fails the run
 * (SANDBOX_UNAVAILABLE) rather than running weaker. The script is analysed first (TypeScript is
 * type-checked against the upstreams' declarations) and the findings are printed with line and
 * column. This is a developer/admin door: it applies no policy or review — those belong to the
 * run lifecycle. Without --config it uses the same configuration as the server (lib/runs/runtime),
 * and it always uses the server's tool pins, in the database (./upstreams.ts): a tool an admin
 * accepted is callable here, a changed one is quarantined here as there. The sandbox's temporary
 * directories (and its scratch mount) are gone before the command returns.
 */
import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { analyzeScript } from "@/lib/intake/analyze";
import { ALLOWED_BUILTINS, ISOLATION_LEVELS, membersTornDown, runInSandbox, type Envelope, type IsolationLevel, type StagedInput } from "@/lib/sandbox";
import { exitOnUsageError, parseCliArgs, UsageError, type CliIo } from "./io";
import { loadCliConfig, withCliBroker } from "./upstreams";

export const EXEC_USAGE = `Usage: airlock exec FILE [--input NAME=PATH]... [--allow SERVER.TOOL,...|--allow-all]
                    [--isolation strict|permission-only] [--timeout-ms N] [--json] [--config PATH]

Runs FILE (.js/.mjs: JavaScript, .ts/.mts: TypeScript) as the body of an async function in the
sandbox. Exit 0: the run succeeded; 1: it did not; 2: bad arguments.
`;

const badArgs = (message: string) => new UsageError(message, EXEC_USAGE, "exec");

function parse(argv: string[]) {
  const { values, positionals } = parseCliArgs(
    argv,
    {
      input: { type: "string", multiple: true, default: [] },
      allow: { type: "string" },
      "allow-all": { type: "boolean", default: false },
      isolation: { type: "string" },
      "timeout-ms": { type: "string" },
      json: { type: "boolean", default: false },
      config: { type: "string" },
    },
    EXEC_USAGE,
    { allowPositionals: true, command: "exec" },
  );
  if (positionals.length !== 1) throw badArgs("exactly one FILE is required");
  const file = positionals[0]!;
  const ext = extname(file);
  const language = [".ts", ".mts"].includes(ext) ? "typescript" : [".js", ".mjs"].includes(ext) ? "javascript" : null;
  if (!language) throw badArgs(`FILE must end in .js, .mjs, .ts or .mts (got '${ext || file}')`);
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
  let timeoutMs: number | undefined;
  if (values["timeout-ms"] !== undefined) {
    timeoutMs = Number(values["timeout-ms"]);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000) throw badArgs("--timeout-ms must be an integer between 1 and 3600000");
  }
  return {
    file,
    language: language as "typescript" | "javascript",
    inputs,
    allow,
    allowAll: values["allow-all"],
    isolation: values.isolation as IsolationLevel | undefined,
    timeoutMs,
    json: values.json,
    config: values.config,
  };
}

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

export async function execCommand(argv: string[], io: CliIo): Promise<number> {
  return exitOnUsageError(io, async () => {
    const args = parse(argv);
    let code: string;
    try {
      code = readFileSync(args.file, "utf8");
    } catch (error) {
      throw badArgs((error as Error).message);
    }
    const config = loadCliConfig(args.config, io, "exec");
    if (!config) return 1;
    return withCliBroker(config, io, "exec", async (broker) => {
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
      return env.status === "succeeded" ? 0 : 1;
    });
  });
}
