/**
 * A skill version's tests, replayed: each past run of its pattern runs again as the skill, in a
 * real sandbox, against that run's recorded tool calls (fixtures) instead of the upstreams.
 *
 * replaySkillTests(deps, actor, versionId) needs skills:manage and a draft. For each test the
 * skill's code runs with the run's arguments (`return await (<code>)(<args>)`); every tool call
 * it makes is answered with the recorded result of the next unused recorded call of the same tool
 * with the same arguments (canonical JSON), so nothing reaches an upstream and no write is made.
 * A case passes when analysis finds nothing in the skill's script that intake would fail it for
 * (an error or a critical finding: a type error in the skill's code, an invalid argument), and the
 * script succeeded, made exactly the recorded calls, returned the recorded
 * result (both screened as results are, lib/runs/gate.ts) and the result fits the output schema.
 * The report is stored bound to the version's content digest and audited (`skill.tested`);
 * publishing needs a report of that content with every case passed (./service.ts).
 */
import { recordAudit } from "@/lib/audit/record";
import { compileToolSchema, issuesText } from "@/lib/broker/schema-check";
import { canonicalJson } from "@/lib/canonical-json";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import type { Prisma } from "@/lib/generated/prisma/client";
import { screenJson } from "@/lib/runs/gate";
import type { Envelope, RunRequest } from "@/lib/sandbox";
import type { Finding } from "@/lib/contracts/analysis";
import { skillRunScript } from "./draft";
import type { SkillTest, TestReport } from "./service";

export type ReplayDeps = {
  db: Db;
  runScript(request: RunRequest): Promise<Envelope>;
  /** Intake's analysis of a script (lib/intake/analyze.ts, against the registry and the package allowlist): its findings. */
  analyze(code: string, language: "typescript" | "javascript"): readonly Finding[];
};

/** A test replays recorded answers, so it is quick or it is wrong (the other limits are the sandbox's defaults). */
const REPLAY_LIMITS = { timeoutMs: 10_000 };

async function replayOne(
  deps: ReplayDeps,
  code: string,
  language: "typescript" | "javascript",
  allowedTools: string[],
  test: SkillTest,
  checkOutput: (v: unknown) => string | null,
) {
  const script = skillRunScript(code, test.arguments, language);
  // What intake would make of run_skill's script: a finding that fails it (an error or worse) means
  // no call of the skill with these arguments runs, so the skill must not be published.
  const blocking = deps.analyze(script, language).find((f) => f.severity === "error" || f.severity === "critical");
  if (blocking) {
    return { ok: false, message: `Analysis refuses the skill's script: line ${blocking.line}: ${blocking.message} (${blocking.code})`.slice(0, 500) };
  }
  const unused = test.calls.map((call) => ({ ...call, key: canonicalJson(call.args ?? null), used: false }));
  let stray: string | null = null;
  const envelope = await deps.runScript({
    code: script,
    language,
    allowedTools,
    limits: REPLAY_LIMITS,
    callTool: async (server, tool, args) => {
      const key = canonicalJson(args ?? null);
      const recorded = unused.find((c) => !c.used && c.server === server && c.tool === tool && c.key === key);
      if (!recorded) {
        stray ??= `${server}.${tool} was called with arguments the run did not record`;
        throw new Error(`not in the recorded calls: ${server}.${tool}`);
      }
      recorded.used = true;
      return recorded.result;
    },
  });
  if (stray) return { ok: false, message: `${stray}.` };
  if (envelope.status !== "succeeded")
    return { ok: false, message: `${envelope.status}: ${envelope.error?.code ?? ""} ${envelope.error?.message ?? ""}`.trim().slice(0, 500) };
  const missing = unused.filter((c) => !c.used);
  if (missing.length > 0) return { ok: false, message: `${missing.length} recorded call(s) were not made, first ${missing[0]!.server}.${missing[0]!.tool}.` };
  const result = screenJson(envelope.result, "result").value;
  if (canonicalJson(result) !== canonicalJson(screenJson(test.expected, "result").value))
    return { ok: false, message: "The result differs from the recorded one." };
  const outputProblem = checkOutput(result);
  if (outputProblem) return { ok: false, message: `The result does not fit the output schema: ${outputProblem}`.slice(0, 500) };
  return { ok: true, message: `Returned the recorded result after ${test.calls.length} recorded call(s).` };
}

export async function replaySkillTests(deps: ReplayDeps, actor: Actor, versionId: string): Promise<TestReport> {
  requireScope(actor, "skills:manage");
  const version = await deps.db.skillVersion.findUnique({ where: { id: versionId }, include: { skill: true } });
  if (!version) throw new AppError("not_found", `No skill version ${versionId}.`);
  if (version.status !== "draft")
    throw new AppError("conflict", `${version.skill.name} v${version.version} is ${version.status}; its tests ran before it was decided.`);
  const tests = (Array.isArray(version.tests) ? version.tests : []) as SkillTest[];
  if (tests.length === 0)
    throw new AppError("conflict", `${version.skill.name} v${version.version} has no tests: its pattern had no complete, retained, untruncated run.`);
  const output = compileToolSchema(version.outputSchema as Record<string, unknown>);
  const checkOutput = (value: unknown) => (output instanceof Error ? output.message : output(value).length > 0 ? issuesText(output(value)) : null);
  const allowedTools = Array.isArray(version.capabilitySet) ? version.capabilitySet.filter((c): c is string => typeof c === "string") : [];
  const cases: TestReport["cases"] = [];
  for (const test of tests) cases.push({ runId: test.runId, ...(await replayOne(deps, version.code, version.language, allowedTools, test, checkOutput)) });
  const passed = cases.filter((c) => c.ok).length;
  const report: TestReport = { contentDigest: version.contentDigest, at: new Date().toISOString(), passed, failed: cases.length - passed, cases };
  await deps.db.$transaction(async (tx) => {
    await tx.skillVersion.update({ where: { id: versionId, status: "draft" }, data: { testReport: report as unknown as Prisma.InputJsonValue } });
    await recordAudit(tx, {
      actor,
      action: "skill.tested",
      subject: { type: "skill_version", id: versionId },
      data: { name: version.skill.name, version: version.version, contentDigest: version.contentDigest, passed, failed: report.failed },
    });
  });
  return report;
}
