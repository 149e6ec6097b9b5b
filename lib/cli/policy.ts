/**
 * `airlock policy validate|replay|propose|approve`: work on Cedar policy drafts from the shell.
 * validate prints each problem as FILE:LINE:COL; replay shows how the draft would have decided the
 * last N proposals against what was decided; propose (alias: publish) makes the draft a proposed
 * version, and approve, by a different admin, publishes a proposed version — both name the admin
 * with --as EMAIL (./person.ts) and are audited; a person never publishes alone. validate and
 * replay answer in JSON with --json (validate: `{ file, ok, errors, warnings }`, also replay's
 * answer for a draft that does not validate). A flag of another subcommand is refused, never ignored.
 */
import { readFile } from "node:fs/promises";
import { validatePolicyText } from "@/lib/policy/policy-set";
import { replayDraft } from "@/lib/policy/replay";
import { approvePolicyVersion, proposePolicyText } from "@/lib/policy/store";
import { withCliDatabase } from "./database";
import { emailFlag, exitOnUsageError, parseCliArgs, requiredFlag, UsageError, wholeNumberFlag, type CliIo } from "./io";
import { actingAs } from "./person";

export const POLICY_USAGE = `Usage:
  airlock policy validate --file draft.cedar [--json]
  airlock policy replay --file draft.cedar [--last N] [--json]
  airlock policy propose --file draft.cedar --as ADMIN_EMAIL      (publish is an alias: it proposes)
  airlock policy approve --version N --as OTHER_ADMIN_EMAIL      (publishes it; not the proposer)
`;

/** The flags each subcommand takes; another's is refused rather than ignored. */
const FLAGS = {
  validate: ["file", "json"],
  replay: ["file", "last", "json"],
  propose: ["file", "as"],
  publish: ["file", "as"],
  approve: ["version", "as"],
} as const;

type Subcommand = keyof typeof FLAGS;

export async function policyCommand(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  return exitOnUsageError(io, async () => {
    if (sub === "--help" || sub === "-h" || sub === "help") {
      io.stdout(POLICY_USAGE);
      return 0;
    }
    if (sub === undefined || !Object.hasOwn(FLAGS, sub)) throw new UsageError(`unknown policy command ${JSON.stringify(sub ?? "")}`, POLICY_USAGE);
    return policySubcommand(sub as Subcommand, rest, io);
  });
}

async function policySubcommand(sub: Subcommand, rest: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(
    rest,
    { file: { type: "string" }, last: { type: "string" }, json: { type: "boolean" }, version: { type: "string" }, as: { type: "string" } },
    POLICY_USAGE,
  );
  const taken: readonly string[] = FLAGS[sub];
  const stray = Object.keys(values).find((flag) => !taken.includes(flag));
  if (stray) throw new UsageError(`--${stray} is not a flag of policy ${sub}; it takes ${taken.map((flag) => `--${flag}`).join(", ")}`, POLICY_USAGE);
  if (sub === "approve") {
    const version = wholeNumberFlag(requiredFlag(values.version, "--version", POLICY_USAGE), "--version", { min: 1, max: 2_147_483_647 }, POLICY_USAGE)!;
    const as = emailFlag(requiredFlag(values.as, "--as", POLICY_USAGE), "--as", POLICY_USAGE);
    await withCliDatabase((db) => actingAs(db, as, "cli:policy approve", (actor) => db.$transaction((tx) => approvePolicyVersion(tx, actor, version))));
    io.stdout(`Approved policy version ${version}; it is published and decides new proposals from now on.\n`);
    return 0;
  }
  if (!values.file) throw new UsageError("--file is required", POLICY_USAGE);
  const proposer = sub === "propose" || sub === "publish" ? emailFlag(requiredFlag(values.as, "--as", POLICY_USAGE), "--as", POLICY_USAGE) : null;
  const last = wholeNumberFlag(values.last, "--last", { min: 1, max: 10_000 }, POLICY_USAGE) ?? 50;
  let text: string;
  try {
    text = await readFile(values.file, "utf8");
  } catch (error) {
    io.stderr(`airlock: cannot read ${values.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return 1;
  }
  const validation = validatePolicyText(text);
  if (values.json && (sub === "validate" || !validation.ok)) {
    io.stdout(JSON.stringify({ file: values.file, ...validation }, null, 2) + "\n");
    return validation.ok ? 0 : 1;
  }
  for (const problem of [...validation.errors, ...validation.warnings]) {
    io.stderr(`${values.file}:${problem.line}:${problem.column}: ${validation.errors.includes(problem) ? "error" : "warning"}: ${problem.message}\n`);
  }
  if (!validation.ok) return 1;
  if (sub === "validate") {
    io.stdout(`${values.file}: valid\n`);
    return 0;
  }
  if (proposer !== null) {
    const proposed = await withCliDatabase((db) =>
      actingAs(db, proposer, `cli:policy ${sub}`, (actor) => db.$transaction((tx) => proposePolicyText(tx, actor, text))),
    );
    io.stdout(`Proposed policy version ${proposed.version}; it is published when a second admin approves it:\n`);
    io.stdout(`  airlock policy approve --version ${proposed.version} --as OTHER_ADMIN_EMAIL\n`);
    return 0;
  }
  const { rows, changed } = await withCliDatabase((db) => replayDraft(db, text, last), { mustExist: true });
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
