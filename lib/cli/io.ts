/**
 * The CLI's plumbing, shared by every command module: how a command prints (CliIo), who it acts as
 * (CLI_ACTOR), how it parses its arguments (parseCliArgs: node:util parseArgs, strict) and how wrong
 * arguments end (UsageError: the message and the usage on stderr, exit 2).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { Actor } from "@/lib/contracts/scopes";

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

/** Runs a command; a UsageError it throws is printed (UsageError.render) and becomes exit code 2. */
export async function exitOnUsageError(io: CliIo, command: () => Promise<number>): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(error.render());
    return 2;
  }
}

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * node:util parseArgs, always strict (unknown or malformed options are errors); its errors become
 * a UsageError with `usage`. Positionals are refused unless `allowPositionals`. A flag given twice
 * is refused (parseArgs would keep the last silently) unless its option is `multiple`.
 */
export function parseCliArgs<const T extends Options, const P extends boolean = false>(
  args: string[],
  options: T,
  usage: string,
  extra: { allowPositionals?: P; command?: string } = {},
) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: (extra.allowPositionals ?? false) as P, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message, usage, extra.command);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once; give it once`, usage, extra.command);
    seen.add(token.name);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

/** A string flag that must be present and not blank. */
export function requiredFlag(value: unknown, flag: string, usage: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`${flag} is required`, usage);
  return value;
}
