/**
 * The only reader of process.env. Configuration is parsed once with a closed zod schema; each
 * problem is reported with the variable's name and how to fix it, and start-up stops there.
 * Unknown AIRLOCK_* variables are refused so that a typo cannot silently fall back to a default.
 */
import { isIP } from "node:net";
import { z } from "zod";

/** A whole number written in decimal digits (`0x50`, `1e3` or ` 8080 ` are refused, not read as 80, 1000 and 8080). */
const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}, in digits`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const port = wholeNumber(1, 65535);
const optionalString = z
  .string()
  .trim()
  .transform((value) => (value === "" ? undefined : value))
  .optional();

const schema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
    DATABASE_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://")
        .optional(),
    ),
    // The owner that applies migrations, when the app's DATABASE_URL is an unprivileged role.
    AIRLOCK_MIGRATION_DATABASE_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://")
        .optional(),
    ),
    PORT: port.default(3000),
    AIRLOCK_HOST: z.string().min(1).default("127.0.0.1"),
    AIRLOCK_DATA_DIR: z.string().min(1).default(".airlock"),
    AIRLOCK_AUDIT_KEY_FILE: optionalString,
    AIRLOCK_AUDIT_CHECKPOINT_DIR: optionalString,
    AIRLOCK_PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional()),
    AIRLOCK_DEMO_PASSWORD: optionalString.pipe(z.string().min(12, "must be at least 12 characters").optional()),
    AIRLOCK_CONFIG: optionalString,
    AIRLOCK_ALLOWED_HOSTS: optionalString,
    // The sign-in throttle (lib/auth/login-throttle.ts): failures before delays start, and the longest delay.
    AIRLOCK_LOGIN_MAX_FAILURES: wholeNumber(1, 1000).default(3),
    AIRLOCK_LOGIN_WINDOW_MINUTES: wholeNumber(1, 1440).default(15),
    AIRLOCK_TRUSTED_PROXIES: z
      .string()
      .default("")
      .transform((value, ctx) => {
        const entries = value
          .split(",")
          .map((entry) => entry.trim())
          .filter(Boolean);
        for (const entry of entries) {
          const [address, bits, extra] = entry.split("/");
          const family = isIP(address ?? "");
          const maxBits = family === 6 ? 128 : 32;
          if (!family || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits))) {
            ctx.addIssue({ code: "custom", message: `has ${JSON.stringify(entry)}, which is not an IP address or CIDR block (like 10.0.0.1 or 10.0.0.0/8)` });
          }
        }
        return entries;
      }),
    AIRLOCK_MAX_CODE_BYTES: wholeNumber(1024, 10_000_000).default(100_000),
    AIRLOCK_BUDGET_RUNS_PER_HOUR: wholeNumber(1, 1_000_000).default(120),
    AIRLOCK_BUDGET_CONCURRENT_RUNS: wholeNumber(1, 10_000).default(4),
    AIRLOCK_BUDGET_CPU_SECONDS_PER_DAY: wholeNumber(1, 100_000_000).default(3600),
    AIRLOCK_BUDGET_PENDING_REVIEWS: wholeNumber(1, 10_000).default(10),
    AIRLOCK_LOOP_BREAKER_FAILURES: wholeNumber(1, 1000).default(5),
    AIRLOCK_LOOP_BREAKER_WINDOW_MINUTES: wholeNumber(1, 1440).default(10),
    AIRLOCK_IN_PROCESS_WORKER: z
      .enum(["true", "false"], { message: "must be true or false" })
      .default("true")
      .transform((value) => value === "true"),
    AIRLOCK_REVIEW_TTL_HOURS: z
      .string()
      .regex(/^\d+(\.\d+)?$/, "must be a number of hours like 24 or 0.5, in digits")
      .transform(Number)
      .pipe(
        z
          .number()
          .min(0.01)
          .max(24 * 365),
      )
      .default(24),
    AIRLOCK_REVIEW_WEBHOOK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
    // When set, /api/metrics answers only `Authorization: Bearer <this>`.
    AIRLOCK_METRICS_TOKEN: optionalString.pipe(z.string().min(16, "must be at least 16 characters").optional()),
    // Logs (lib/log.ts): "pretty" for people, "json" for collectors; unset, pretty on a terminal and JSON otherwise.
    AIRLOCK_LOG_FORMAT: optionalString.pipe(z.enum(["pretty", "json"], { message: "must be pretty or json" }).optional()),
    AIRLOCK_LOG_LEVEL: optionalString.pipe(
      z.enum(["debug", "info", "warn", "error", "silent"], { message: "must be debug, info, warn, error or silent" }).optional(),
    ),
    // Traces (lib/tracing-sdk.ts) are off unless an OTLP endpoint is set; the SDK reads the other OTEL_* variables itself.
    OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(z.url().optional()),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(z.url().optional()),
    OTEL_EXPORTER_OTLP_PROTOCOL: optionalString.pipe(
      z.enum(["http/protobuf", "http/json"], { message: "must be http/protobuf or http/json (grpc is not supported)" }).optional(),
    ),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: optionalString.pipe(
      z.enum(["http/protobuf", "http/json"], { message: "must be http/protobuf or http/json (grpc is not supported)" }).optional(),
    ),
    OTEL_SDK_DISABLED: optionalString.pipe(z.enum(["true", "false"], { message: "must be true or false" }).optional()),
    OTEL_SERVICE_NAME: optionalString,
    // Next's own switch: when "true", Next leaves SIGTERM/SIGINT to us (lib/runs/boot.ts drains).
    NEXT_MANUAL_SIG_HANDLE: z.enum(["true", "false"]).optional(),
    AUTH_SECRET: optionalString.pipe(z.string().min(32, "must be at least 32 characters").optional()),
    AIRLOCK_OIDC_ISSUER: optionalString.pipe(z.url().optional()),
    AIRLOCK_OIDC_CLIENT_ID: optionalString,
    AIRLOCK_OIDC_CLIENT_SECRET: optionalString,
  })
  .superRefine((value, ctx) => {
    if (value.AIRLOCK_MIGRATION_DATABASE_URL && !value.DATABASE_URL) {
      ctx.addIssue({
        code: "custom",
        path: ["AIRLOCK_MIGRATION_DATABASE_URL"],
        message: "is only used with DATABASE_URL (the embedded PostgreSQL migrates as its own owner); set DATABASE_URL too, or unset it",
      });
    }
    const oidc = [value.AIRLOCK_OIDC_ISSUER, value.AIRLOCK_OIDC_CLIENT_ID, value.AIRLOCK_OIDC_CLIENT_SECRET];
    if (oidc.some(Boolean) && !oidc.every(Boolean)) {
      ctx.addIssue({
        code: "custom",
        path: ["AIRLOCK_OIDC_ISSUER"],
        message: "set AIRLOCK_OIDC_ISSUER, AIRLOCK_OIDC_CLIENT_ID and AIRLOCK_OIDC_CLIENT_SECRET together, or none",
      });
    }
  });

export type Env = z.infer<typeof schema>;

/** Every variable Airlock reads; the README's table lists the same names. */
export const ENV_KEYS = Object.keys(schema.shape) as (keyof Env)[];

const KNOWN_PREFIXED = new Set<string>(ENV_KEYS.filter((key) => key.startsWith("AIRLOCK_")));

export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "EnvError";
  }
}

export function parseEnv(source: Record<string, string | undefined>): Env {
  const problems: string[] = [];
  for (const key of Object.keys(source)) {
    if (key.startsWith("AIRLOCK_") && !KNOWN_PREFIXED.has(key)) {
      problems.push(`${key} is not a setting Airlock knows; remove it or check its spelling (see README).`);
    }
  }
  const picked = Object.fromEntries(ENV_KEYS.map((key) => [key, source[key]]));
  const parsed = schema.safeParse(picked);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0] ?? "environment");
      problems.push(`${name} ${issue.message}; fix it in the environment (see README).`);
    }
  }
  if (problems.length > 0 || !parsed.success) throw new EnvError(problems);
  return parsed.data;
}

let cached: Env | undefined;

/** The validated configuration of this process. Throws EnvError naming each bad variable. */
export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}

/**
 * For launchers (scripts/start.ts) that prepare values for child processes, e.g. the embedded
 * database's URL: sets them in this process and re-validates.
 */
export function setEnvForChildren(values: Record<string, string>): Env {
  Object.assign(process.env, values);
  cached = undefined;
  return env();
}

/** Where people open the console: AIRLOCK_PUBLIC_URL, else the local address. */
export function consoleBaseUrl(): string {
  const config = env();
  return (config.AIRLOCK_PUBLIC_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, "");
}

/** The environment a child process of the app inherits (the Next server, workers). */
export function childProcessEnv(): NodeJS.ProcessEnv {
  return { ...process.env };
}
