/**
 * `airlock skills …`, reading an existing database only:
 * - `patterns [--min N] [--json]`: the patterns of runs (lib/review/patterns.ts), as the console's
 *   Patterns page lists them. The JSON is `{ "patterns": [{ fingerprint, count, successRate,
 *   agents, firstAt, lastAt, reviewSeconds, holes, exampleRunIds }] }`; the text is one line per
 *   pattern.
 * - `list [--json]`: the skills with their versions, and the standing approvals with their state,
 *   uses and what remains (lib/skills), as the Skills page lists them. JSON:
 *   `{ "skills": [{ id, name, versions }], "standingApprovals": [...] }`.
 * - `revoke --standing ID --as ADMIN_EMAIL`: revokes a standing approval at once, as that admin
 *   (lib/skills/standing.ts; audited), for when the console is not at hand.
 */
import { listPatterns } from "@/lib/review/patterns";
import { listSkills } from "@/lib/skills/service";
import { listStandingApprovals, revokeStandingApproval } from "@/lib/skills/standing";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, emailFlag, parseCliArgs, requiredFlag, uuidFlag, wholeNumberFlag, type CliIo } from "./io";
import { actingAs } from "./person";

const USAGE = "Usage: airlock skills patterns [--min N] [--json]\n";

export async function skillsPatternsCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(args, { min: { type: "string" }, json: { type: "boolean" } }, USAGE);
  const minRuns = wholeNumberFlag(values.min, "--min", { min: 1, max: 1_000_000 }, USAGE) ?? 2;
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

const LIST_USAGE = "Usage: airlock skills list [--json]\n";

export async function skillsListCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(args, { json: { type: "boolean" } }, LIST_USAGE);
  const { skills, standingApprovals } = await withCliDatabase(
    async (db) => ({ skills: await listSkills(db, CLI_ACTOR), standingApprovals: await listStandingApprovals(db, CLI_ACTOR) }),
    { mustExist: true },
  );
  if (values.json) {
    io.stdout(JSON.stringify({ skills, standingApprovals }, null, 2) + "\n");
    return 0;
  }
  if (skills.length === 0) io.stdout("No skill yet: draft one from a pattern on the console's Patterns page.\n");
  for (const skill of skills) {
    for (const v of skill.versions) {
      const tests = v.report ? `${v.report.passed} passed, ${v.report.failed} failed${v.report.current ? "" : " (stale)"}` : "tests not run";
      io.stdout(`${skill.name} v${v.version}\t${v.status}\t${v.tests} tests, ${tests}\t${v.approvals} approvals\t${v.id}\n`);
    }
  }
  for (const a of standingApprovals) {
    io.stdout(
      `standing ${a.id}\t${a.skill} v${a.version}\t${a.state}\t${a.uses} of ${a.maxUses} used, ${a.remaining} left\tuntil ${a.notAfter}\t${a.agents.join(",")}\n`,
    );
  }
  return 0;
}

const REVOKE_USAGE = "Usage: airlock skills revoke --standing ID --as ADMIN_EMAIL\n";

export async function skillsRevokeCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(args, { standing: { type: "string" }, as: { type: "string" } }, REVOKE_USAGE);
  const id = uuidFlag(requiredFlag(values.standing, "--standing", REVOKE_USAGE), "--standing", "a standing approval's id", REVOKE_USAGE);
  const as = emailFlag(requiredFlag(values.as, "--as", REVOKE_USAGE), "--as", REVOKE_USAGE);
  await withCliDatabase((db) => actingAs(db, as, "cli:skills revoke", (actor) => revokeStandingApproval(db, actor, { id })), { mustExist: true });
  io.stdout(`Revoked standing approval ${id}: the next call it covered is decided by policy again.\n`);
  return 0;
}
