/**
 * `airlock.config.json`: the upstream MCP servers, their data classes, the package allowlist,
 * the sandbox (isolation level, pool size, whether start-up may degrade to permission-only) and the
 * retention window of each data class in days (`retention.days`, defaults when absent). Parsed
 * with closed (strict) zod schemas; every problem names its key path (`servers.ledger.url: ...`,
 * `retention.days.secret: ...`). Credentials (env, headers) stay in the host process: they are
 * passed to the upstream transport and never to a sandbox. So they need not be written in the file,
 * a value of `env` or `headers` may name variables of Airlock's own environment, `${NAME}`, which
 * are read when the file is loaded; one that is not set is a problem naming it (there is no escape:
 * a value cannot hold a literal `${`). Relative commands and working
 * directories resolve against the config file's directory.
 *
 * Tool pins live in the database (lib/broker/db-registry.ts DbPinStore), for the server and the CLI
 * alike. A `pins` key left in a config file by an older version is accepted and ignored: loadConfig
 * warns once (one line on stderr) and drops it.
 */
import { readFileSync } from "node:fs";
import { strictJsonProblem } from "@/lib/untrusted/strict-json";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { RETENTION_DEFAULT_DAYS, type RetentionDays } from "@/lib/audit/retention-windows";
import { DATA_CLASSES, PII_FIELD_PATH, PII_TOKEN_KINDS, type DataClass } from "@/lib/contracts/data-classes";
import { DEFAULT_PACKAGES } from "@/lib/contracts/packages";
import { childProcessEnv, env } from "@/lib/env";
import { ISOLATION_LEVELS } from "@/lib/sandbox/types";

const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "must be an identifier (letters, digits, _)");
const dataClass = z.enum(DATA_CLASSES);
const retentionDays = z.number().int().positive().max(36_500);
const retentionDayShape = Object.fromEntries([...DATA_CLASSES, "default"].map((key) => [key, retentionDays.optional()])) as Record<
  DataClass | "default",
  z.ZodOptional<typeof retentionDays>
>;
/**
 * Per tool: its data class, and `piiFields` — where its results and arguments hold personal data
 * the model must see only as tokens (`{ "customers[].email": "EMAIL", "customers[].name": "NAME" }`).
 */
const toolOverrides = z
  .record(
    z.string().min(1),
    z
      .object({
        dataClass: dataClass.optional(),
        piiFields: z.record(z.string().regex(PII_FIELD_PATH, "must be a field path such as customers[].email"), z.enum(PII_TOKEN_KINDS)).optional(),
      })
      .strict(),
  )
  .default({});

const stdioServer = z
  .object({
    transport: z.literal("stdio"),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
    dataClass,
    tools: toolOverrides,
  })
  .strict();

const httpServer = z
  .object({
    transport: z.literal("http"),
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).default({}),
    dataClass,
    tools: toolOverrides,
  })
  .strict();

const configSchema = z
  .object({
    $schema: z.string().optional(),
    servers: z.record(identifier, z.discriminatedUnion("transport", [stdioServer, httpServer])),
    packages: z.array(z.string().regex(/^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/, "must be an npm package name")).default([...DEFAULT_PACKAGES]),
    sandbox: z
      .object({
        isolation: z.enum(ISOLATION_LEVELS).default("strict"),
        poolSize: z.number().int().min(0).max(64).default(2),
        // Start at permission-only when `strict` cannot be met, instead of refusing to start (lib/runs/isolation.ts).
        allowDegraded: z.boolean().optional(),
      })
      .strict()
      .default({ isolation: "strict", poolSize: 2 }),
    callTimeoutMs: z.number().int().min(100).max(600_000).default(30_000),
    // Days each data class keeps its payloads (lib/audit/retention-windows.ts); unnamed classes keep the defaults.
    retention: z
      .object({ days: z.object(retentionDayShape).strict().default({}) })
      .strict()
      .default({ days: {} })
      .transform(({ days }): { days: RetentionDays } => ({ days: { ...RETENTION_DEFAULT_DAYS, ...days } })),
  })
  .strict();

export type AirlockConfig = z.infer<typeof configSchema>;
export type ServerConfig = AirlockConfig["servers"][string];

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is invalid:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const REFERENCE = /\$\{([^}]*)\}/g;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The values with each `${NAME}` replaced from `environment`; a reference that cannot be is a problem naming its key path. */
function expandReferences(
  values: Record<string, string>,
  at: string,
  environment: Readonly<Record<string, string | undefined>>,
  problems: string[],
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [
      key,
      value.replace(REFERENCE, (reference, name: string) => {
        if (!VARIABLE.test(name)) problems.push(`${at}.${key}: ${reference} is not a variable name (letters, digits, _)`);
        else if (environment[name] === undefined) problems.push(`${at}.${key}: \${${name}} names a variable that is not set in Airlock's environment`);
        return environment[name] ?? "";
      }),
    ]),
  );
}

/** A problem's text: zod's own, or for a record key the key's rule (zod says only "Invalid key in record"). */
function problemText(issue: z.core.$ZodIssue): string {
  const inner = issue.code === "invalid_key" ? issue.issues[0]?.message : undefined;
  return `${issue.path.map(String).join(".") || "(root)"}: ${inner ?? issue.message}`;
}

export function parseConfig(raw: unknown, file: string, environment: Readonly<Record<string, string | undefined>> = childProcessEnv()): AirlockConfig {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(file, parsed.error.issues.map(problemText));
  const baseDir = dirname(resolve(file));
  const config = parsed.data;
  const problems: string[] = [];
  for (const [name, server] of Object.entries(config.servers)) {
    if (server.transport === "http") {
      server.headers = expandReferences(server.headers, `servers.${name}.headers`, environment, problems);
      // What HTTP refuses in a header (a line break, a character past Latin-1) is said here by key, never by value: it may be a credential.
      for (const [key, value] of Object.entries(server.headers)) {
        if (/[\r\n\0]|[^\u0000-\u00ff]/.test(value))
          problems.push(`servers.${name}.headers.${key}: holds a line break or a character HTTP headers cannot carry`);
      }
      continue;
    }
    server.env = expandReferences(server.env, `servers.${name}.env`, environment, problems);
    server.cwd = resolve(baseDir, server.cwd ?? ".");
    if (server.command.includes("/") && !isAbsolute(server.command)) server.command = resolve(server.cwd, server.command);
  }
  if (problems.length > 0) throw new ConfigError(file, problems);
  return config;
}

/** The warning for a config file that still has a `pins` key (one line, with its newline). */
function ignoredPinsWarning(file: string): string {
  return `airlock: warning: pins in ${file} is ignored: tool pins live in the database (changed tools are accepted on the Tools page); remove the key\n`;
}

/**
 * Reads the config from `path`, else AIRLOCK_CONFIG, else ./airlock.config.json. A `pins` key is
 * dropped with one line to `warn` (default: stderr).
 */
export function loadConfig(path?: string, options: { warn?: (line: string) => void } = {}): AirlockConfig {
  // turbopackIgnore: a runtime path from configuration; without it Next traces the whole project.
  const file = resolve(/*turbopackIgnore: true*/ path ?? env().AIRLOCK_CONFIG ?? "airlock.config.json");
  let text: string;
  try {
    text = readFileSync(/*turbopackIgnore: true*/ file, "utf8");
  } catch (cause) {
    throw new ConfigError(file, [`cannot be read (${(cause as NodeJS.ErrnoException).code ?? "error"})`]);
  }
  // Editors on Windows save a byte-order mark; it is not part of the JSON.
  if (text.startsWith("\ufeff")) text = text.slice(1);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(file, [`is not valid JSON: ${(cause as Error).message}`]);
  }
  // JSON.parse keeps the last of two equal keys: a second "servers" would drop every server of the first.
  const duplicate = strictJsonProblem(text, 64);
  if (duplicate) throw new ConfigError(file, [duplicate]);
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw) && Object.hasOwn(raw, "pins")) {
    (options.warn ?? ((line) => process.stderr.write(line)))(ignoredPinsWarning(file));
    const { pins: _ignored, ...rest } = raw as Record<string, unknown>;
    raw = rest;
  }
  return parseConfig(raw, file);
}
