/**
 * Skills: a pattern of runs (lib/review/patterns.ts) promoted to a reviewed, versioned function.
 * The one service behind the console's skill pages and the agent tools that read skills.
 *
 * - proposeSkill(db, actor, fingerprint): what a draft of the pattern would hold — the code of
 *   its newest retained run with the varying literals bound to arguments (lib/skills/draft.ts),
 *   the input schema lifted from them, the output schema inferred from past results, and the
 *   tests: the pattern's complete, retained, untruncated runs, with how many were skipped and why.
 *   Stores nothing. Needs skills:manage (admins).
 * - draftSkill(db, actor, raw): stores that draft, with the admin's name, description, argument
 *   names and schemas, as the next version of the skill of that name (version 1 of a new one).
 *   Its content (code, schemas, tests) is fixed from then on (a trigger); contentDigest covers it.
 * - reviewSkillVersion(db, actor, raw): a reviewer (skills:review, a person, not the drafter)
 *   approves or rejects a draft, bound to the content digest they saw. Approving needs a test
 *   report of that very content with every test passed (lib/skills/replay.ts). The second
 *   approval publishes the version; one rejection rejects it. Votes and outcomes are audited.
 * - listSkills / getSkillVersion (skills:read): for the console.
 * - publishedSkill(db, name, version?): the published version run_skill and scripts use: the one
 *   asked for, or the newest published.
 *
 * Refused with bad_request naming the field: malformed input (closed zod schemas), a name that
 * is not a lower-camel identifier, schemas that are not closed object schemas Ajv compiles,
 * an input schema that does not describe exactly the bound arguments, a pattern with no
 * retained run. Votes on a version that is no longer a draft, or whose content changed, conflict.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { compileToolSchema } from "@/lib/broker/schema-check";
import { canonicalJson } from "@/lib/canonical-json";
import { requireScope, type Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { AppError, invalidArguments } from "@/lib/errors";
import type { Prisma } from "@/lib/generated/prisma/client";
import { varyingHoles } from "@/lib/review/patterns";
import type { Hole } from "@/lib/script-fingerprint";
import { inferSchema } from "./schema-infer";
import {
  SkillDraftError,
  carriedConstraints,
  inputSchemaOf,
  inputType,
  isInputName,
  isOwnPropertyName,
  skillArguments,
  skillCode,
  suggestInputs,
  toolArgumentSites,
  type JsonSchema,
  type SkillInput,
} from "./draft";

/** Runs of a pattern read for a draft, newest first (without their results: at most MAX_TESTS + OUTPUT_SAMPLES of those are read). */
const CANDIDATE_RUNS = 500;
/** Results of succeeded runs the output schema is inferred from. */
const OUTPUT_SAMPLES = 20;
/** Tests a draft keeps: the newest qualifying runs. */
export const MAX_TESTS = 10;
export const APPROVALS_TO_PUBLISH = 2;

export const SKILL_NAME = /^[a-z][A-Za-z0-9]{0,63}$/;

export type SkillCall = { server: string; tool: string; args: unknown; result: unknown };
export type SkillTest = { runId: string; arguments: Record<string, unknown>; expected: unknown; calls: SkillCall[] };
export type SkipReason = "not_succeeded" | "purged" | "truncated" | "uses_inputs" | "other_literals" | "call_failed";

export type SkillProposal = {
  fingerprint: string;
  exampleRunId: string;
  language: "typescript" | "javascript";
  name: string;
  description: string;
  code: string;
  inputs: SkillInput[];
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  tests: SkillTest[];
  skipped: Partial<Record<SkipReason, number>>;
  capabilitySet: string[];
};

const fingerprintSchema = z.string().regex(/^[0-9a-f]{64}$/, "fingerprint must be a pattern's sha256");
const jsonObject = z.record(z.string(), z.unknown());

export const draftSkillSchema = z.strictObject({
  fingerprint: fingerprintSchema,
  name: z
    .string()
    .regex(SKILL_NAME, "name must be lowerCamelCase letters and digits, up to 64")
    .refine(isOwnPropertyName, "name must not be one every object has (constructor, toString, …)"),
  description: z.string().trim().min(1, "description is required").max(500),
  /** The holes that become arguments and their names; default: the proposal's. */
  inputs: z
    .array(z.strictObject({ hole: z.number().int().min(0).max(10_000), name: z.string().max(64) }))
    .max(20)
    .optional(),
  inputSchema: jsonObject.optional(),
  outputSchema: jsonObject.optional(),
});

export const reviewSkillSchema = z.strictObject({
  versionId: z.uuid(),
  verdict: z.enum(["approve", "reject"]),
  contentDigest: z.string().regex(/^[0-9a-f]{64}$/),
  comment: z.string().trim().max(2_000).optional(),
});

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** A schema the broker's Ajv compiles. */
function checkedSchema(schema: JsonSchema, field: string): JsonSchema {
  const compiled = compileToolSchema(schema);
  if (compiled instanceof Error) throw new AppError("bad_request", `${field}: ${compiled.message}`, { details: { field } });
  return schema;
}

/** The input schema must be a closed object schema naming exactly the bound arguments, all required. */
function checkInputSchema(schema: JsonSchema, inputs: readonly SkillInput[]): JsonSchema {
  checkedSchema(schema, "inputSchema");
  if (schema.type !== "object")
    throw new AppError("bad_request", `inputSchema: must be an object schema ("type": "object").`, { details: { field: "inputSchema" } });
  const properties = schema.properties && typeof schema.properties === "object" ? Object.keys(schema.properties) : [];
  const names = inputs.map((i) => i.name);
  const same = (a: string[], b: string[]) => [...a].sort().join("\n") === [...b].sort().join("\n");
  if (schema.additionalProperties !== false || !same(properties, names) || !same(strings(schema.required), names)) {
    throw new AppError(
      "bad_request",
      `inputSchema: must be closed (additionalProperties false) with exactly the arguments ${names.join(", ") || "(none)"}, all required.`,
      {
        details: { field: "inputSchema" },
      },
    );
  }
  return schema;
}

type CandidateRun = {
  id: string;
  status: string;
  purpose: string;
  language: "typescript" | "javascript";
  execution: unknown;
  inputs: unknown;
  purged: unknown;
  fingerprintHoles: unknown;
  capabilitySet: unknown;
};

async function candidates(db: Db, fingerprint: string): Promise<CandidateRun[]> {
  return db.run.findMany({
    where: { fingerprint, kind: "script" },
    select: {
      id: true,
      status: true,
      purpose: true,
      language: true,
      execution: true,
      inputs: true,
      purged: true,
      fingerprintHoles: true,
      capabilitySet: true,
    },
    orderBy: { createdAt: "desc" },
    take: CANDIDATE_RUNS,
  });
}

const holesOf = (run: CandidateRun): Hole[] => (Array.isArray(run.fingerprintHoles) ? (run.fingerprintHoles as Hole[]) : []);
const purgedFields = (run: { purged: unknown }) => (run.purged && typeof run.purged === "object" ? Object.keys(run.purged) : []);

/** The tests the pattern's runs make, and why the others are skipped. */
async function collectTests(db: Db, runs: CandidateRun[], example: CandidateRun & { code: string }, inputs: SkillInput[]) {
  const bound = new Set(inputs.map((i) => i.hole));
  const fixed = holesOf(example).map((h, index) => (bound.has(index) ? null : h.value));
  const skipped: Partial<Record<SkipReason, number>> = {};
  const skip = (reason: SkipReason) => void (skipped[reason] = (skipped[reason] ?? 0) + 1);
  const tests: SkillTest[] = [];
  for (const run of runs) {
    if (tests.length >= MAX_TESTS) break;
    if (run.status !== "succeeded") {
      skip("not_succeeded");
      continue;
    }
    if (purgedFields(run).length > 0) {
      skip("purged");
      continue;
    }
    const execution = run.execution as { truncated?: unknown } | null;
    if (execution?.truncated === true) {
      skip("truncated");
      continue;
    }
    if (Array.isArray(run.inputs) && run.inputs.length > 0) {
      skip("uses_inputs");
      continue;
    }
    const holes = holesOf(run);
    if (holes.length !== fixed.length || fixed.some((value, i) => value !== null && holes[i]?.value !== value)) {
      skip("other_literals");
      continue;
    }
    const calls = await db.runToolCall.findMany({ where: { runId: run.id, phase: "apply" }, orderBy: { seq: "asc" } });
    if (calls.some((c) => c.outcome !== "ok")) {
      skip("call_failed");
      continue;
    }
    if (calls.some((c) => c.purgedAt !== null)) {
      skip("purged");
      continue;
    }
    // The digests cover the whole value; a stored value cut to its size no longer matches.
    if (calls.some((c) => jsonDigest(c.args) !== c.argsDigest || c.resultDigest === null || jsonDigest(c.result) !== c.resultDigest)) {
      skip("truncated");
      continue;
    }
    tests.push({
      runId: run.id,
      arguments: skillArguments(holes, inputs),
      expected: null,
      calls: calls.map((c) => ({ server: c.server, tool: c.tool, args: c.args, result: c.result })),
    });
  }
  // Their recorded results, in one read (candidates are read without them).
  const results = new Map(
    (await db.run.findMany({ where: { id: { in: tests.map((t) => t.runId) } }, select: { id: true, result: true } })).map((r) => [r.id, r.result]),
  );
  for (const test of tests) test.expected = results.get(test.runId) ?? null;
  return { tests, skipped };
}

function draftError(error: unknown): never {
  if (error instanceof SkillDraftError) throw new AppError("bad_request", error.message, { details: { field: "inputs" } });
  throw error;
}

async function buildProposal(db: Db, fingerprint: string, chosen?: { hole: number; name: string }[]): Promise<SkillProposal> {
  const runs = await candidates(db, fingerprint);
  const newest = runs.find((r) => !purgedFields(r).includes("code"));
  const example = newest && { ...newest, code: (await db.run.findUniqueOrThrow({ where: { id: newest.id }, select: { code: true } })).code };
  if (!example || example.code === "")
    throw new AppError("bad_request", "This pattern has no run whose code is still retained; nothing can be promoted from it.", {
      details: { field: "fingerprint" },
    });
  const varying = varyingHoles(runs.map((r) => r.fingerprintHoles));
  let inputs: SkillInput[];
  let code: string;
  try {
    const holes = holesOf(example);
    inputs = chosen
      ? chosen.map(({ hole, name }) => {
          const values = varying.find((v) => v.index === hole)?.values ?? [holes[hole]?.value ?? ""];
          return { hole, name, type: inputType(holes[hole] ?? { type: "string" }, values), values };
        })
      : suggestInputs(example.code, example.language, varying);
    code = skillCode(example.code, example.language, inputs);
  } catch (error) {
    draftError(error);
  }
  const { tests, skipped } = await collectTests(db, runs, example, inputs);
  const samples = await db.run.findMany({
    where: { fingerprint, kind: "script", status: "succeeded" },
    select: { result: true, purged: true },
    orderBy: { createdAt: "desc" },
    take: OUTPUT_SAMPLES,
  });
  const results = samples.filter((r) => !purgedFields(r).includes("result")).map((r) => r.result ?? null);
  // A first name: the tool it calls (issueRefund), for the admin to change.
  const name =
    strings(example.capabilitySet)[0]
      ?.split(".")
      .pop()
      ?.replace(/^[^a-z]+/, "")
      .replace(/[^A-Za-z0-9]/g, "") ?? "";
  return {
    fingerprint,
    exampleRunId: example.id,
    language: example.language,
    name: SKILL_NAME.test(name) ? name : "",
    description: example.purpose,
    code,
    inputs,
    inputSchema: inputSchemaOf(inputs, await toolConstraints(db, example.code, example.language, inputs)),
    outputSchema: inferSchema(results),
    tests,
    skipped,
    capabilitySet: strings(example.capabilitySet).sort(),
  };
}

/** What the tools the inputs are arguments of require of them (carriedConstraints), by hole; from the accepted tools in the registry. */
async function toolConstraints(db: Db, code: string, language: string, inputs: readonly SkillInput[]): Promise<Map<number, JsonSchema>> {
  const sites = toolArgumentSites(code, language, inputs);
  if (sites.size === 0) return new Map();
  const rows = await db.upstreamTool.findMany({
    where: { quarantined: false, OR: [...sites.values()].map(({ server, tool }) => ({ name: tool, server: { name: server } })) },
    select: { name: true, inputSchema: true, server: { select: { name: true } } },
  });
  const schemas = new Map(rows.map((row) => [`${row.server.name}.${row.name}`, row.inputSchema]));
  const constraints = new Map<number, JsonSchema>();
  for (const input of inputs) {
    const site = sites.get(input.hole);
    const schema = site && schemas.get(`${site.server}.${site.tool}`);
    if (site && schema !== undefined) constraints.set(input.hole, carriedConstraints(schema, site.path, input));
  }
  return constraints;
}

export async function proposeSkill(db: Db, actor: Actor, fingerprint: unknown): Promise<SkillProposal> {
  requireScope(actor, "skills:manage");
  const parsed = fingerprintSchema.safeParse(fingerprint);
  if (!parsed.success) throw invalidArguments(parsed.error);
  return buildProposal(db, parsed.data);
}

/** What a version's digest covers: everything that decides what it does and how it is tested. */
export function contentDigestOf(content: {
  name: string;
  version: number;
  description: string;
  language: string;
  code: string;
  inputSchema: unknown;
  outputSchema: unknown;
  tests: unknown;
}): string {
  return sha256Hex(canonicalJson(content));
}

export type DraftedSkill = { skillId: string; versionId: string; name: string; version: number; tests: number; skipped: Partial<Record<SkipReason, number>> };

export async function draftSkill(db: Db, actor: Actor, raw: unknown): Promise<DraftedSkill> {
  requireScope(actor, "skills:manage");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can draft a skill.");
  const parsed = draftSkillSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const input = parsed.data;
  const bad = input.inputs?.find((i) => !isInputName(i.name));
  if (bad)
    throw new AppError("bad_request", `inputs: "${bad.name}" cannot name an argument; use an identifier that is not a reserved word.`, {
      details: { field: "inputs" },
    });
  const proposal = await buildProposal(db, input.fingerprint, input.inputs);
  const inputSchema = checkInputSchema(input.inputSchema ?? proposal.inputSchema, proposal.inputs);
  const outputSchema = checkedSchema(input.outputSchema ?? proposal.outputSchema, "outputSchema");
  return db.$transaction(async (tx) => {
    // One writer per name at a time: versions are numbered without gaps or twins.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`skill:${input.name}`}))`;
    const skill = await tx.skill.upsert({ where: { name: input.name }, create: { name: input.name }, update: {} });
    const last = await tx.skillVersion.findFirst({ where: { skillId: skill.id }, orderBy: { version: "desc" }, select: { version: true } });
    const version = (last?.version ?? 0) + 1;
    const content = {
      name: input.name,
      version,
      description: input.description,
      language: proposal.language,
      code: proposal.code,
      inputSchema,
      outputSchema,
      tests: proposal.tests,
    };
    const contentDigest = contentDigestOf(content);
    const created = await tx.skillVersion.create({
      data: {
        skillId: skill.id,
        version,
        description: input.description,
        language: proposal.language,
        code: proposal.code,
        inputSchema: inputSchema as Prisma.InputJsonValue,
        outputSchema: outputSchema as Prisma.InputJsonValue,
        fingerprint: input.fingerprint,
        capabilitySet: proposal.capabilitySet,
        tests: proposal.tests as Prisma.InputJsonValue,
        skipped: proposal.skipped,
        contentDigest,
        draftedById: actor.id,
      },
    });
    await recordAudit(tx, {
      actor,
      action: "skill.drafted",
      subject: { type: "skill_version", id: created.id },
      data: {
        name: input.name,
        version,
        fingerprint: input.fingerprint,
        contentDigest,
        codeSha256: sha256Hex(proposal.code),
        tests: proposal.tests.length,
        skipped: proposal.skipped,
      },
    });
    return { skillId: skill.id, versionId: created.id, name: input.name, version, tests: proposal.tests.length, skipped: proposal.skipped };
  });
}

export type TestReport = { contentDigest: string; at: string; passed: number; failed: number; cases: { runId: string; ok: boolean; message: string }[] };

export function testReportOf(value: unknown): TestReport | null {
  const report = value as TestReport | null;
  return report && typeof report === "object" && Array.isArray(report.cases) ? report : null;
}

export type ReviewResult = { versionId: string; status: "draft" | "published" | "rejected"; approvals: number; required: number };

export async function reviewSkillVersion(db: Db, actor: Actor, raw: unknown): Promise<ReviewResult> {
  requireScope(actor, "skills:review");
  if (actor.type !== "user") throw new AppError("forbidden", "Only a person can review a skill.");
  const parsed = reviewSkillSchema.safeParse(raw);
  if (!parsed.success) throw invalidArguments(parsed.error);
  const { versionId, verdict, contentDigest, comment } = parsed.data;
  return db.$transaction(async (tx) => {
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM "SkillVersion" WHERE id = ${versionId}::uuid FOR UPDATE`;
    if (locked.length === 0) throw new AppError("not_found", `No skill version ${versionId}.`);
    const version = await tx.skillVersion.findUniqueOrThrow({ where: { id: versionId }, include: { skill: true, reviews: true } });
    const label = `${version.skill.name} v${version.version}`;
    if (version.status !== "draft") throw new AppError("conflict", `${label} is ${version.status}; only a draft is reviewed.`);
    if (version.contentDigest !== contentDigest) throw new AppError("conflict", `${label} is not the version you saw; reload it and review again.`);
    if (version.draftedById === actor.id) throw new AppError("forbidden", "You drafted this version; two other people review it.");
    if (version.reviews.some((r) => r.reviewerId === actor.id)) throw new AppError("conflict", `You already reviewed ${label}.`);
    const report = testReportOf(version.testReport);
    if (verdict === "approve" && (!report || report.contentDigest !== version.contentDigest || report.failed > 0 || report.passed === 0)) {
      throw new AppError(
        "conflict",
        `${label} cannot be approved until its replay tests have run and every one passed${report ? ` (last run: ${report.passed} passed, ${report.failed} failed)` : ""}.`,
      );
    }
    await tx.skillReview.create({ data: { skillVersionId: versionId, reviewerId: actor.id, verdict, comment: comment ?? null, contentDigest } });
    const approvals = version.reviews.filter((r) => r.verdict === "approve").length + (verdict === "approve" ? 1 : 0);
    const subject = { type: "skill_version", id: versionId };
    await recordAudit(tx, {
      actor,
      action: "skill.reviewed",
      subject,
      data: { name: version.skill.name, version: version.version, verdict, comment: comment ?? null, contentDigest, approvals, required: APPROVALS_TO_PUBLISH },
    });
    let status: ReviewResult["status"] = "draft";
    if (verdict === "reject") status = "rejected";
    else if (approvals >= APPROVALS_TO_PUBLISH) status = "published";
    if (status !== "draft") {
      await tx.skillVersion.update({ where: { id: versionId }, data: { status, decidedAt: new Date() } });
      await recordAudit(tx, { actor, action: `skill.${status}`, subject, data: { name: version.skill.name, version: version.version, contentDigest } });
    }
    return { versionId, status, approvals, required: APPROVALS_TO_PUBLISH };
  });
}

export type SkillVersionRow = {
  id: string;
  version: number;
  status: "draft" | "published" | "rejected";
  description: string;
  createdAt: string;
  tests: number;
  report: { passed: number; failed: number; current: boolean } | null;
  approvals: number;
};
export type SkillRow = { id: string; name: string; versions: SkillVersionRow[] };

export async function listSkills(db: Db, actor: Actor): Promise<SkillRow[]> {
  requireScope(actor, "skills:read");
  const skills = await db.skill.findMany({
    orderBy: { name: "asc" },
    include: { versions: { orderBy: { version: "desc" }, include: { reviews: { select: { verdict: true } } } } },
  });
  return skills.map((skill) => ({
    id: skill.id,
    name: skill.name,
    versions: skill.versions.map((v) => {
      const report = testReportOf(v.testReport);
      return {
        id: v.id,
        version: v.version,
        status: v.status,
        description: v.description,
        createdAt: v.createdAt.toISOString(),
        tests: Array.isArray(v.tests) ? v.tests.length : 0,
        report: report && { passed: report.passed, failed: report.failed, current: report.contentDigest === v.contentDigest },
        approvals: v.reviews.filter((r) => r.verdict === "approve").length,
      };
    }),
  }));
}

export async function getSkillVersion(db: Db, actor: Actor, versionId: string) {
  requireScope(actor, "skills:read");
  if (!z.uuid().safeParse(versionId).success) return null;
  return db.skillVersion.findUnique({
    where: { id: versionId },
    include: {
      skill: true,
      draftedBy: { select: { email: true, name: true } },
      reviews: { orderBy: { createdAt: "asc" }, include: { reviewer: { select: { email: true, name: true } } } },
    },
  });
}

export type PublishedSkill = {
  id: string;
  name: string;
  version: number;
  description: string;
  language: "typescript" | "javascript";
  code: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
};

function published(
  v: { id: string; version: number; description: string; language: "typescript" | "javascript"; code: string; inputSchema: unknown; outputSchema: unknown },
  name: string,
): PublishedSkill {
  return {
    id: v.id,
    name,
    version: v.version,
    description: v.description,
    language: v.language,
    code: v.code,
    inputSchema: v.inputSchema as JsonSchema,
    outputSchema: v.outputSchema as JsonSchema,
  };
}

/** The published version asked for, or the newest published one; null when there is none. */
export async function publishedSkill(db: Db, name: string, version?: number): Promise<PublishedSkill | null> {
  const found = await db.skillVersion.findFirst({
    where: { skill: { name }, status: "published", ...(version === undefined ? {} : { version }) },
    orderBy: { version: "desc" },
  });
  return found && published(found, name);
}

/**
 * The newest published version of every skill, by name: one statement, as every search_tools reads
 * it; with `remembered` (the runtime's), none until the skills change (lib/db/remembered.ts).
 */
export async function publishedSkills(db: Db, remembered?: Remembered): Promise<readonly PublishedSkill[]> {
  const read = async () => {
    const rows = await db.$queryRaw<(Parameters<typeof published>[0] & { name: string })[]>`
      SELECT DISTINCT ON (s.name) v.id, s.name, v.version, v.description, v.language::text AS language, v.code, v."inputSchema", v."outputSchema"
      FROM "SkillVersion" v JOIN "Skill" s ON s.id = v."skillId"
      WHERE v.status = 'published'
      ORDER BY s.name, v.version DESC`;
    return rows.map((row) => published(row, row.name));
  };
  return remembered ? remembered.read("skills:published", read) : read();
}
