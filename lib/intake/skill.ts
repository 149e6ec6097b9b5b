/**
 * run_skill: one call of a published skill (lib/skills) with arguments. The one service function
 * behind the MCP tool.
 *
 * Guarantees:
 * - the skill is a published version: the one named, or the newest published; anything else is a
 *   bad request naming search_tools;
 * - the arguments are validated against the version's input schema before anything is stored
 *   (bad_request naming the argument and the rule); a `__proto__` key is refused;
 * - the run's code is the skill's code applied to the arguments (lib/skills/draft.ts,
 *   skillRunScript), so analysis, policy, reviewers and the audit log see exactly what runs, and
 *   the run records the version it used (`Run.skills`);
 * - where policy escalates, a standing approval that covers the call (lib/skills/standing.ts)
 *   approves it instead of reviewers, in the transaction that stores the run, and the run records
 *   it; policy's deny still denies. Everything else is submit_run's (./submit.ts).
 */
import { z } from "zod";
import { compileToolSchema, issuesText } from "@/lib/broker/schema-check";
import { toolArgumentsSchema } from "@/lib/contracts/direct-call";
import { requireScope } from "@/lib/contracts/scopes";
import { canonicalJson } from "@/lib/canonical-json";
import { nearestName } from "@/lib/edit-distance";
import { AppError, echoedText, invalidArguments } from "@/lib/errors";
import type { AgentActor, RunDeps, RunView } from "@/lib/runs/service";
import { skillRunScript } from "@/lib/skills/draft";
import { publishedSkill, publishedSkills } from "@/lib/skills/service";
import { parseSubmit, recordingRefusals, submitProposal, type SubmitOptions } from "./submit";
import { storableText } from "@/lib/untrusted/storable-text";

export const runSkillSchema = z.strictObject({
  name: z.string().max(64).superRefine(storableText),
  version: z.number().int().min(1).max(10_000).optional(),
  arguments: toolArgumentsSchema,
});

export async function submitSkillRun(deps: RunDeps, actor: AgentActor, raw: unknown, options: Pick<SubmitOptions, "wait" | "follow"> = {}): Promise<RunView> {
  return recordingRefusals(deps.db, actor, raw, async () => {
    requireScope(actor, "runs:submit");
    const parsed = runSkillSchema.safeParse(raw);
    if (!parsed.success) throw invalidArguments(parsed.error);
    const { name, version, arguments: args } = parsed.data;
    const skill = await publishedSkill(deps.db, name, version);
    if (!skill) {
      const shown = JSON.stringify(echoedText(name, 64));
      const which = version === undefined ? `published skill ${shown}` : `published version ${version} of ${shown}`;
      const near =
        version === undefined
          ? nearestName(
              name,
              (await publishedSkills(deps.db)).map((skill) => skill.name),
            )
          : null;
      throw new AppError("bad_request", `There is no ${which}; ${near ? `did you mean ${near}? ` : ""}search_tools lists the skills.`, {
        details: { field: version === undefined ? "name" : "version" },
        next: "Call search_tools to list the published skills, then call run_skill with one of their names.",
      });
    }
    const check = compileToolSchema(skill.inputSchema);
    const issues = check instanceof Error ? [{ path: "", keyword: "schema", message: check.message, params: {} }] : check(args);
    if (issues.length > 0) {
      throw new AppError(
        "bad_request",
        `arguments do not fit ${name} v${skill.version}'s input schema: ${issuesText(issues).replaceAll("data", "arguments")}`.slice(0, 2_000),
        {
          details: { field: `arguments${issues[0]!.path.replaceAll("/", ".")}` },
          next: `Fix the argument the message names and call again; search_tools (query "${name}", detail full) declares the skill's arguments.`,
        },
      );
    }
    const input = parseSubmit(
      { code: skillRunScript(skill.code, args, skill.language), purpose: `Skill ${name} v${skill.version}`, language: skill.language, inputs: [] },
      { text: canonicalJson(args), origin: "arguments" },
    );
    return submitProposal(deps, actor, input, options, {
      kind: "script",
      action: "run",
      skill: { versionId: skill.id, name, version: skill.version, arguments: args },
    });
  });
}
