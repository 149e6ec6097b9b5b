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

/** Wrong arguments: the message and usage go to stderr, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}
