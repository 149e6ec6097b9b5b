/**
 * `airlock policy validate|replay|publish --file F`: work on Cedar policy drafts from the shell.
 * validate prints each problem as FILE:LINE:COL; replay shows how the draft would have decided the
 * last N proposals against what was decided; publish makes the draft the deciding version (audited).
 */
import { readFile } from "node:fs/promises";
import { validatePolicyText } from "@/lib/policy/policy-set";
import { replayDraft } from "@/lib/policy/replay";
import { publishPolicyText } from "@/lib/policy/store";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, parseCliArgs, UsageError, type CliIo } from "./io";

const USAGE = `Usage:
  airlock policy validate --file draft.cedar
  airlock policy replay --file draft.cedar [--last N] [--json]
  airlock policy publish --file draft.cedar
`;

export async function policyCommand(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== "validate" && sub !== "replay" && sub !== "publish") throw new UsageError(`unknown policy command ${JSON.stringify(sub ?? "")}`, USAGE);
  const { values } = parseCliArgs(rest, { file: { type: "string" }, last: { type: "string" }, json: { type: "boolean" } }, USAGE);
  if (!values.file) throw new UsageError("--file is required", USAGE);
  const last = values.last === undefined ? 50 : Number(values.last);
  if (!Number.isInteger(last) || last < 1 || last > 10_000) throw new UsageError("--last must be a whole number from 1 to 10000", USAGE);
  let text: string;
  try {
    text = await readFile(values.file, "utf8");
  } catch (error) {
    io.stderr(`airlock: cannot read ${values.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return 1;
  }
  const validation = validatePolicyText(text);
  for (const problem of [...validation.errors, ...validation.warnings]) {
    io.stderr(`${values.file}:${problem.line}:${problem.column}: ${validation.errors.includes(problem) ? "error" : "warning"}: ${problem.message}\n`);
  }
  if (!validation.ok) return 1;
  if (sub === "validate") {
    io.stdout(`${values.file}: valid\n`);
    return 0;
  }
  if (sub === "publish") {
    const published = await withCliDatabase((db) => db.$transaction((tx) => publishPolicyText(tx, CLI_ACTOR, text)));
    io.stdout(`Published policy version ${published.version}.\n`);
    return 0;
  }
  const { rows, changed } = await withCliDatabase((db) => replayDraft(db, text, last));
  if (values.json) {
    io.stdout(JSON.stringify({ replayed: rows.length, changed, rows }, null, 2) + "\n");
    return 0;
  }
  const label = (d: { decision: string | null; approvalsRequired: number }) =>
    d.decision === "escalate" ? `escalate(${d.approvalsRequired})` : (d.decision ?? "-");
  for (const row of rows) {
    io.stdout(
      `${row.changed ? "CHANGED" : "same   "}  ${row.createdAt.slice(0, 19)}  ${row.agent.padEnd(16)} ${label(row.before).padEnd(12)} -> ${label(row.after).padEnd(12)} ${row.purpose.slice(0, 50)}\n`,
    );
  }
  io.stdout(`${rows.length} proposal(s) replayed, ${changed} would be decided differently.\n`);
  return 0;
}
