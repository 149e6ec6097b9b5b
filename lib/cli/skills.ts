/**
 * `airlock skills patterns [--min N] [--json]`: the patterns of runs (lib/review/patterns.ts), as
 * the console's Patterns page lists them. The JSON is
 * `{ "patterns": [{ fingerprint, count, successRate, agents, firstAt, lastAt, reviewSeconds, holes,
 * exampleRunIds }] }`; the text is one line per pattern. Reads an existing database only.
 */
import { listPatterns } from "@/lib/review/patterns";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, parseCliArgs, UsageError, type CliIo } from "./io";

const USAGE = "Usage: airlock skills patterns [--min N] [--json]\n";

export async function skillsPatternsCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(args, { min: { type: "string" }, json: { type: "boolean" } }, USAGE);
  const minRuns = values.min === undefined ? 2 : Number(values.min);
  if (!Number.isInteger(minRuns) || minRuns < 1 || minRuns > 1_000_000) throw new UsageError("--min must be a whole number of runs, at least 1", USAGE);
  const { patterns } = await withCliDatabase((db) => listPatterns(db, CLI_ACTOR, { minRuns }), { mustExist: true });
  if (values.json) {
    io.stdout(JSON.stringify({ patterns }, null, 2) + "\n");
    return 0;
  }
  if (patterns.length === 0) {
    io.stdout(`No pattern of ${minRuns} or more runs.\n`);
    return 0;
  }
  for (const p of patterns) {
    const success = p.successRate === null ? "-" : `${Math.round(p.successRate * 100)}%`;
    const holes = p.holes.map((h) => `#${h.index + 1}=${h.values.map((v) => JSON.stringify(v)).join("|")}`).join(" ") || "no varying literal";
    io.stdout(`${p.fingerprint.slice(0, 12)}\t${p.count} runs\t${success} succeeded\treview ${p.reviewSeconds}s\t${p.agents.join(",")}\t${holes}\n`);
  }
  return 0;
}
