/**
 * `airlock policy validate|replay|propose|approve`: work on Cedar policy drafts from the shell.
 * validate prints each problem as FILE:LINE:COL; replay shows how the draft would have decided the
 * last N proposals against what was decided; propose (alias: publish) makes the draft a proposed
 * version, and approve, by a different admin, publishes a proposed version — both name the admin
 * with --as EMAIL (./person.ts) and are audited; a person never publishes alone.
 */
import { readFile } from "node:fs/promises";
import { validatePolicyText } from "@/lib/policy/policy-set";
import { replayDraft } from "@/lib/policy/replay";
import { approvePolicyVersion, proposePolicyText } from "@/lib/policy/store";
import { withCliDatabase } from "./database";
import { parseCliArgs, requiredFlag, UsageError, type CliIo } from "./io";
import { actingAs } from "./person";

export const POLICY_USAGE = `Usage:
  airlock policy validate --file draft.cedar
  airlock policy replay --file draft.cedar [--last N] [--json]
  airlock policy propose --file draft.cedar --as ADMIN_EMAIL      (publish is an alias: it proposes)
  airlock policy approve --version N --as OTHER_ADMIN_EMAIL      (publishes it; not the proposer)
`;

const SUBCOMMANDS = ["validate", "replay", "propose", "publish", "approve"] as const;

export async function policyCommand(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (!(SUBCOMMANDS as readonly (string | undefined)[]).includes(sub))
    throw new UsageError(`unknown policy command ${JSON.stringify(sub ?? "")}`, POLICY_USAGE);
  const { values } = parseCliArgs(
    rest,
    { file: { type: "string" }, last: { type: "string" }, json: { type: "boolean" }, version: { type: "string" }, as: { type: "string" } },
    POLICY_USAGE,
  );
  if (sub === "approve") {
    const version = Number(values.version);
    if (!Number.isInteger(version) || version < 1 || version > 2_147_483_647)
      throw new UsageError("--version must be a policy version number (1 or more)", POLICY_USAGE);
    const as = requiredFlag(values.as, "--as", POLICY_USAGE);
    await withCliDatabase((db) => actingAs(db, as, "cli:policy approve", (actor) => db.$transaction((tx) => approvePolicyVersion(tx, actor, version))));
    io.stdout(`Approved policy version ${version}; it is published and decides new proposals from now on.\n`);
    return 0;
  }
  if (!values.file) throw new UsageError("--file is required", POLICY_USAGE);
  const proposer = sub === "propose" || sub === "publish" ? requiredFlag(values.as, "--as", POLICY_USAGE) : null;
  const last = values.last === undefined ? 50 : Number(values.last);
  if (!Number.isInteger(last) || last < 1 || last > 10_000) throw new UsageError("--last must be a whole number from 1 to 10000", POLICY_USAGE);
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
