/**
 * The CLI's plumbing, shared by every command module: how a command prints (CliIo), who it acts as
 * (CLI_ACTOR), how it parses its arguments (parseCliArgs: node:util parseArgs, strict), how wrong
 * arguments end (UsageError: the message and the usage on stderr, exit 2), how `--help` ends (the
 * command's own usage on stdout, exit 0), and the forms a flag's value must have (wholeNumberFlag,
 * uuidFlag, emailFlag: refused with the flag and what was typed, exit 2, before any service sees
 * it). A service's refusal of a value names the service's field; namingFlags names the flag instead.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { z } from "zod";
import { emailSchema } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { AppError } from "@/lib/errors";

/** How CLI commands print: injected so tests can capture output without spawning a process. */
export type CliIo = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of standard input (for --password-stdin). */
  readStdin: () => Promise<string>;
};

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  },
};

/**
 * Who every CLI command acts as. Whoever can run the CLI has the host's database credentials
 * already; what the commands change is audited like any other change, by this actor.
 */
export const CLI_ACTOR: Actor = Object.freeze({ type: "system", name: "cli" });

/**
 * Wrong arguments: exit code 2, with the message and the usage on stderr. A `command` (exec,
 * tools) names itself in the message and sets the usage off by a blank line.
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
    readonly command?: string,
  ) {
    super(message);
    this.name = "UsageError";
  }

  /** The text printed on stderr. */
  render(): string {
    return this.command ? `airlock ${this.command}: ${this.message}\n\n${this.usage}` : `airlock: ${this.message}\n${this.usage}`;
  }
}

/** `--help` (or `-h`) among a command's flags: its usage goes to stdout, exit code 0. */
export class HelpRequested extends Error {
  constructor(readonly usage: string) {
    super("help requested");
    this.name = "HelpRequested";
  }
}

/**
 * Runs a command; a UsageError it throws is printed (UsageError.render) and becomes exit code 2, a
 * HelpRequested prints the usage on stdout and becomes exit code 0.
 */
export async function exitOnUsageError(io: CliIo, command: () => Promise<number>): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (error instanceof HelpRequested) {
      io.stdout(error.usage);
      return 0;
    }
    if (!(error instanceof UsageError)) throw error;
    io.stderr(error.render());
    return 2;
  }
}

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * `--flag -5` as `--flag=-5` for a string option: parseArgs calls a value that starts with a dash
 * ambiguous, and the flag's own check then names its range at once. Nothing after `--` is touched.
 */
function joinNegativeValues(args: string[], options: Options): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return [...joined, ...args.slice(i)];
    const next = args[i + 1];
    const name = arg.startsWith("--") && !arg.includes("=") ? arg.slice(2) : null;
    if (name !== null && options[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/**
 * node:util parseArgs, always strict (unknown or malformed options are errors); its errors become
 * a UsageError with `usage`. Positionals are refused unless `allowPositionals`. A flag given twice
 * is refused (parseArgs would keep the last silently) unless its option is `multiple`. `--help` or
 * `-h` ends the command with its usage (HelpRequested), unless it is another flag's value.
 */
export function parseCliArgs<const T extends Options, const P extends boolean = false>(
  args: string[],
  options: T,
  usage: string,
  extra: { allowPositionals?: P; command?: string } = {},
) {
  let parsed;
  try {
    parsed = parseArgs({
      args: joinNegativeValues(args, options),
      // `help` is every command's; typed as the command's own options, it is taken out below.
      options: { ...options, help: { type: "boolean", short: "h" } } as T,
      strict: true,
      allowPositionals: (extra.allowPositionals ?? false) as P,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message, usage, extra.command);
  }
  if (parsed.tokens.some((token) => token.kind === "option" && token.name === "help")) throw new HelpRequested(usage);
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once; give it once`, usage, extra.command);
    seen.add(token.name);
  }
  delete (parsed.values as Record<string, unknown>).help;
  return { values: parsed.values, positionals: parsed.positionals };
}

/** A string flag that must be present and not blank. */
export function requiredFlag(value: unknown, flag: string, usage: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`${flag} is required`, usage);
  return value;
}

/** What the user typed, quoted and cut to 100 characters, for a refusal. */
export const typed = (value: string) => JSON.stringify(value.slice(0, 100));

/** A whole number flag: digits only (no sign, exponent or point), from `min` to `max`; undefined when absent. */
export function wholeNumberFlag(
  value: string | undefined,
  flag: string,
  range: { min: number; max: number },
  usage: string,
  command?: string,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < range.min || number > range.max) {
    throw new UsageError(`${flag} must be a whole number from ${range.min} to ${range.max} (got ${typed(value)})`, usage, command);
  }
  return number;
}

/** A flag naming a row by its id: a UUID, refused naming `what` it must be (`a run id`). */
export function uuidFlag(value: string, flag: string, what: string, usage: string, command?: string): string {
  if (!z.uuid().safeParse(value).success) throw new UsageError(`${flag} must be ${what} (a UUID), not ${typed(value)}`, usage, command);
  return value;
}

/** A flag that takes a person's email, refused when it is not one (as the users table would refuse it). */
export function emailFlag(value: string, flag: string, usage: string, command?: string): string {
  if (!emailSchema.safeParse(value).success) throw new UsageError(`${flag} must be an email address, not ${typed(value)}`, usage, command);
  return value;
}

/**
 * Runs `fn`; a service's bad_request that names one of `flags`' fields, or a part of one
 * (details.field `inputs.0` of `inputs`), is told again naming the flag the value came from
 * (`ownerEmail must be …` becomes `--owner must be …`). Still a refused value (exit 1): the flag's
 * form was checked before.
 */
export async function namingFlags<T>(flags: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    const field = error instanceof AppError && error.code === "bad_request" ? error.details?.field : undefined;
    const key = typeof field === "string" ? Object.keys(flags).find((name) => field === name || field.startsWith(`${name}.`)) : undefined;
    if (key === undefined) throw error;
    const flag = flags[key]!;
    const { message } = error as AppError;
    const said = message.startsWith(field as string) ? message.slice((field as string).length).replace(/^:?\s*/, "") : `: ${message}`;
    throw new AppError("bad_request", `${flag} ${said}`, { cause: error, details: { field: flag } });
  }
}
